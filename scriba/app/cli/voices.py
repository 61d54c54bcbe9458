"""`scriba voices`: the voice library, the people a diarized transcription names by their voice.

    scriba voices add NAME CLIP... [--replace | --extend]
    scriba voices list
    scriba voices remove NAME
    scriba voices rename OLD NEW
"""

from __future__ import annotations

import argparse


def add_voices_parser(sub) -> None:
    voices = sub.add_parser(
        "voices", help="keep people's voices: later transcriptions with --diarize name them "
    )
    action = voices.add_subparsers(dest="voices_command", required=True)
    add = action.add_parser("add", help="keep the voice of clips of one person speaking under their name")
    add.add_argument("name", help="the person's name, as transcripts will show it")
    add.add_argument(
        "clips", nargs="+", help="audio or video files of that person alone speaking (1 s of speech or more)"
    )
    again = add.add_mutually_exclusive_group()
    again.add_argument("--replace", action="store_true", help="a name already kept takes this voice instead")
    again.add_argument("--extend", action="store_true", help="a name already kept: the clips join its voice")
    action.add_parser("list", help="the voices kept, with the speech each was made from")
    remove = action.add_parser("remove", help="forget a voice")
    remove.add_argument("name")
    rename = action.add_parser("rename", help="give a kept voice another name")
    rename.add_argument("old")
    rename.add_argument("new")


def run_voices(args: argparse.Namespace) -> int:
    from scriba.speakers.voice_library import VoiceLibrary
    from scriba.transcription.kept_voices import remember_voice

    library = VoiceLibrary()
    if args.voices_command == "add":
        kept = remember_voice(args.name, args.clips, args.replace, args.extend, library)
        print(f"kept {kept.name!r}: {kept.seconds:.1f} s of speech, {kept.clips} clip(s), in {library.path}")
    elif args.voices_command == "list":
        voices = library.voices()
        if not voices:
            print(f"no voices kept (the library: {library.path}); keep one with: scriba voices add NAME CLIP")
        for kept in voices.values():
            print(f"{kept.name}\t{kept.seconds:.1f} s of speech\t{kept.clips} clip(s)")
    elif args.voices_command == "remove":
        library.remove(args.name)
        print(f"forgot {args.name!r}")
    else:
        library.rename(args.old, args.new)
        print(f"{args.old!r} is now {args.new.strip()!r}")
    return 0

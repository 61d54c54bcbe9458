"""What people use: the command line (cli/), the web app (ui/), the OpenAI-compatible server
(server/) and the Ray commands (cluster/)."""

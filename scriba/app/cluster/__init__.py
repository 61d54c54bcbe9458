"""Past one machine, on Ray: `scriba batch` (Ray Data) and `scriba serve --ray` (Ray Serve).

Ray is an optional extra (`pip install 'scriba[ray]'`); nothing else in Scriba imports it.
"""

"""EV Grid Oracle as an OpenEnv environment: wire models, environment, client, app.

Import the parts you need (``evgrid_openenv.client``, ``evgrid_openenv.app``);
this package's ``__init__`` imports nothing, because OpenEnv takes seconds to load.
"""

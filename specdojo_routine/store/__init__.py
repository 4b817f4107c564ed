"""Files and locks: project config, YAML definitions, the event codec, ledgers, views, the
routine lock and the SpecDojo exec-lock protocol. Imports only ``core``."""

"""One thin handler per command (lock, read, fold, decide, append, publish), wiring
``store`` and ``execute`` around ``core``."""

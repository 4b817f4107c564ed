"""The pure core: rules with no I/O and no clock (time and ids come in as parameters).

Definitions model, events, the due engine (``schedule``), the folds (``fold``, ``jobfold``),
command decisions (``decide``), templates and shell quoting, Job inputs and plans, validation
rules, redaction rules and time formats. Imports nothing from the layers above it.
"""

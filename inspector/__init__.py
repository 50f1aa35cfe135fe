"""The inspector floor: a Qt window on top of a Qt-free core, in rooms by job, each importing
only the rooms below it (import-linter holds the order):

``cli`` (the command line) > ``qt`` (the window: the only room that imports Qt) > ``jobs``
(the window's long work) > ``model`` (what the window shows) > ``mutate`` (source mutants) >
``records`` (receipts, sessions, locks) > ``check`` (the proof of one input) > ``coverage``
(the launch-layout coverage map). Each room's ``__init__`` says what it owns.
"""

"""Sessions: the HDF5 file that holds an inspection whole, and its autosave.

``session`` is the door (``Session``, ``save_session``, ``load_session``; an untrusted file is
probed in a child process first); ``data`` what one inspection holds as plain data, ``layout``
each field to its dataset and back, ``hdf5`` typed datasets, ``scan`` the file's structure
checked before its data is read, ``seal`` the user block (schema version, payload size,
sha256), ``snapshot`` the private copy the probe and the reader share, ``room`` the disk space
and size limit before a write, ``autosave`` unsaved work kept for crash recovery.
"""

"""The inspector's widgets: each one thin, drawing what Qt-free code in ``data`` computes."""

##
# tests/python/: the Python module and its example under mpirun.
##
if MPIKVS_PYTHON
endif

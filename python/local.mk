##
# python/: the Python module mpikvs (mpikvs_python(3)).
##
if MPIKVS_PYTHON
endif

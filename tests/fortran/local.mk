##
# tests/fortran/: the Fortran module and its examples under mpirun.
##
if MPIKVS_FORTRAN
endif

##
# fortran/: the Fortran module mpikvs (mpikvs_fortran(3)).
##
if MPIKVS_FORTRAN
endif

##
# examples/reactive-transport/: the demo, mpikvs as the surrogate cache of
# a chemistry solved with SUNDIALS CVODE (rt.h).  Built only when SUNDIALS
# is found (configure --enable-demo / --disable-demo).
##
if MPIKVS_DEMO
bin_PROGRAMS += examples/reactive-transport/mpikvs-reactive-transport
endif

examples_reactive_transport_mpikvs_reactive_transport_SOURCES = \
	examples/reactive-transport/cache.c \
	examples/reactive-transport/cache.h \
	examples/reactive-transport/chemistry.c \
	examples/reactive-transport/chemistry.h \
	examples/reactive-transport/grid.c \
	examples/reactive-transport/grid.h \
	examples/reactive-transport/interpolate.c \
	examples/reactive-transport/interpolate.h \
	examples/reactive-transport/main.c \
	examples/reactive-transport/options.c \
	examples/reactive-transport/options.h \
	examples/reactive-transport/report.c \
	examples/reactive-transport/report.h \
	examples/reactive-transport/rt.c \
	examples/reactive-transport/rt.h \
	examples/reactive-transport/run.c \
	examples/reactive-transport/run.h
# End of examples_reactive_transport_mpikvs_reactive_transport_SOURCES
examples_reactive_transport_mpikvs_reactive_transport_CPPFLAGS = \
	-I$(top_srcdir)/include
examples_reactive_transport_mpikvs_reactive_transport_CFLAGS = \
	$(AM_CFLAGS) $(MPI_CFLAGS) $(SUNDIALS_CFLAGS) -O2
examples_reactive_transport_mpikvs_reactive_transport_LDADD = \
	libmpikvs/libmpikvs.la $(MPI_LIBS) $(SUNDIALS_LIBS)

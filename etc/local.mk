##
# etc/: example job configs, and the plugin's plugstack line, installed in
# $(docdir)/examples.  The plugstack line names the plugin where this
# build installs it ($(spankdir), configure --with-spank-dir), so it is
# made from its template here; configure's summary names the same path.
##
examplesdir = $(docdir)/examples
dist_examples_DATA = \
	etc/examples/chemistry.json \
	etc/examples/minimal.json \
	etc/examples/reactive-transport.json \
	etc/examples/reactive-transport-near.json \
	etc/examples/reactive-transport-near-coarser2.json \
	etc/examples/reactive-transport-near-fields.json
# End of dist_examples_DATA (etc)
nodist_examples_DATA = etc/plugstack.conf.d/mpikvs.conf

# The token is split: configure would substitute a whole one in this
# Makefile itself (man/local.mk).
etc/plugstack.conf.d/mpikvs.conf: $(srcdir)/etc/plugstack.conf.d/mpikvs.conf.in Makefile
	$(AM_V_GEN)$(MKDIR_P) etc/plugstack.conf.d && \
	sed -e 's|@''spankdir@|$(spankdir)|g' \
	    $(srcdir)/etc/plugstack.conf.d/mpikvs.conf.in >$@.tmp && mv $@.tmp $@
CLEANFILES += etc/plugstack.conf.d/mpikvs.conf

EXTRA_DIST += \
	etc/plugstack.conf.d/mpikvs.conf.in
# End of EXTRA_DIST (etc)

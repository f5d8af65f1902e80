##
# man/: pages are .in templates; the build fills in version and date.
##
man_MANS += \
	man/mpikvs-bench.1 \
	man/mpikvs-config.1 \
	man/mpikvs.7 \
	man/mpikvs.json.5
# End of man_MANS

EXTRA_DIST += \
	man/mpikvs-bench.1.in \
	man/mpikvs-config.1.in \
	man/mpikvs.7.in \
	man/mpikvs.json.5.in
# End of EXTRA_DIST (man)

CLEANFILES += $(man_MANS)

MAN_DATE = 2026-11-21
man/%: man/%.in Makefile
	$(AM_V_GEN)$(MKDIR_P) man && \
	sed -e 's|@VERSION@|$(PACKAGE_VERSION)|g' -e 's|@DATE@|$(MAN_DATE)|g' \
	    $< > $@.tmp && mv $@.tmp $@

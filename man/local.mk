##
# man/: pages are .in templates; the build fills in version and date.
##
man_MANS += \
	man/mpikvs-bench.1 \
	man/mpikvs-config.1 \
	man/mpikvs-rmacache.7 \
	man/mpikvs.3 \
	man/mpikvs.7 \
	man/mpikvs.json.5 \
	man/mpikvs_clear.3 \
	man/mpikvs_close.3 \
	man/mpikvs_counter_add.3 \
	man/mpikvs_counter_cas.3 \
	man/mpikvs_counters.3 \
	man/mpikvs_describe.3 \
	man/mpikvs_fence.3 \
	man/mpikvs_foreach_local.3 \
	man/mpikvs_forget.3 \
	man/mpikvs_get_ref.3 \
	man/mpikvs_near_inputs.3 \
	man/mpikvs_get_near_batch.3 \
	man/mpikvs_get_near.3 \
	man/mpikvs_get.3 \
	man/mpikvs_get_batch.3 \
	man/mpikvs_get_batch_start.3 \
	man/mpikvs_info.3 \
	man/mpikvs_key_size.3 \
	man/mpikvs_last_error.3 \
	man/mpikvs_load.3 \
	man/mpikvs_open.3 \
	man/mpikvs_put.3 \
	man/mpikvs_put_if_absent.3 \
	man/mpikvs_put_batch.3 \
	man/mpikvs_put_batch_start.3 \
	man/mpikvs_round_key.3 \
	man/mpikvs_save.3 \
	man/mpikvs_stats.3 \
	man/mpikvs_strerror.3 \
	man/mpikvs_test.3 \
	man/mpikvs_tier_invalidate.3 \
	man/mpikvs_transport.3 \
	man/mpikvs_value_size.3 \
	man/mpikvs_version.3 \
	man/mpikvs_verify_report.3 \
	man/mpikvs_wait.3 \
	man/spank_mpikvs.8
# End of man_MANS

EXTRA_DIST += \
	man/mpikvs-bench.1.in \
	man/mpikvs-config.1.in \
	man/mpikvs-rmacache.7.in \
	man/mpikvs.3.in \
	man/mpikvs.7.in \
	man/mpikvs.json.5.in \
	man/mpikvs_clear.3.in \
	man/mpikvs_close.3.in \
	man/mpikvs_counter_add.3.in \
	man/mpikvs_counter_cas.3.in \
	man/mpikvs_counters.3.in \
	man/mpikvs_describe.3.in \
	man/mpikvs_fence.3.in \
	man/mpikvs_foreach_local.3.in \
	man/mpikvs_forget.3.in \
	man/mpikvs_get_ref.3.in \
	man/mpikvs_near_inputs.3.in \
	man/mpikvs_get_near_batch.3.in \
	man/mpikvs_get_near.3.in \
	man/mpikvs_get.3.in \
	man/mpikvs_get_batch.3.in \
	man/mpikvs_get_batch_start.3.in \
	man/mpikvs_info.3.in \
	man/mpikvs_key_size.3.in \
	man/mpikvs_last_error.3.in \
	man/mpikvs_load.3.in \
	man/mpikvs_open.3.in \
	man/mpikvs_put.3.in \
	man/mpikvs_put_if_absent.3.in \
	man/mpikvs_put_batch.3.in \
	man/mpikvs_put_batch_start.3.in \
	man/mpikvs_round_key.3.in \
	man/mpikvs_save.3.in \
	man/mpikvs_stats.3.in \
	man/mpikvs_strerror.3.in \
	man/mpikvs_test.3.in \
	man/mpikvs_tier_invalidate.3.in \
	man/mpikvs_transport.3.in \
	man/mpikvs_value_size.3.in \
	man/mpikvs_version.3.in \
	man/mpikvs_verify_report.3.in \
	man/mpikvs_wait.3.in \
	man/spank_mpikvs.8.in
# End of EXTRA_DIST (man)

CLEANFILES += $(man_MANS)

MAN_DATE = 2026-11-21
# The token is split for the shell: configure substitutes a whole
# @VERSION@ in this Makefile itself, which left the pages' one untouched.
# @EXAMPLESDIR@: where make install puts the examples the pages quote.
man/%: man/%.in Makefile
	$(AM_V_GEN)$(MKDIR_P) man && \
	sed -e 's|@''VERSION@|$(PACKAGE_VERSION)|g' -e 's|@DATE@|$(MAN_DATE)|g' \
	    -e 's|@''EXAMPLESDIR@|$(examplesdir)|g' \
	    $< > $@.tmp && mv $@.tmp $@

# mpikvs-stat(1)
man_MANS += \
	man/mpikvs-stat.1
# End of man_MANS (mpikvs-stat)

EXTRA_DIST += \
	man/mpikvs-stat.1.in
# End of EXTRA_DIST (man, mpikvs-stat)

# mpikvs-reactive-transport(1), installed with the program
if MPIKVS_DEMO
man_MANS += \
	man/mpikvs-reactive-transport.1
# End of man_MANS (reactive transport)
endif

EXTRA_DIST += \
	man/mpikvs-reactive-transport.1.in
# End of EXTRA_DIST (man, reactive transport)

# An alias page (one line, ".so manN/PAGE") is installed as a symbolic
# link to PAGE: man(1) finds a call's page either way, but `man -l FILE`
# reads ".so manN/PAGE" from the current directory, and fails unless it
# is run in the manual's top directory, while it follows a link.
install-data-hook: install-man-aliases
install-man-aliases:
	@for page in $(man_MANS); do \
	  test "`wc -l <$$page`" -le 1 || continue; \
	  so=`sed -n '1s|^\.so \(man[^/]*/[^/]*\)$$|\1|p' $$page`; \
	  test -n "$$so" || continue; \
	  name=`basename $$page`; \
	  sect=man`echo "$$name" | sed 's/.*\.//'`; \
	  case $$so in $$sect/*) to=$${so#*/} ;; *) to=../$$so ;; esac; \
	  echo " ln -s $$to $(DESTDIR)$(mandir)/$$sect/$$name"; \
	  rm -f "$(DESTDIR)$(mandir)/$$sect/$$name" && \
	  $(LN_S) "$$to" "$(DESTDIR)$(mandir)/$$sect/$$name" || exit 1; \
	done

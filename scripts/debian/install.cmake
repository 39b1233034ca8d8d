# Installation layout and the Debian package, included by the top CMakeLists.txt.
#
# Every installed path comes from GNUInstallDirs (CMAKE_INSTALL_*), and the files that
# name a path (systemd units, the cron example, the maintainer scripts) are generated
# from templates (*.in) with those same values, so they cannot disagree with where the
# binaries really are. The Debian package is built with CMAKE_INSTALL_PREFIX=/usr
# (scripts/package.sh): binaries in /usr/sbin, configuration in /etc.
#
#   cmake --install BUILD          the files below under CMAKE_INSTALL_PREFIX
#   cpack -G DEB (in BUILD)        asyncexec_<version>-<release>_<arch>.deb

set(ASYNCEXEC_DEB_RELEASE 1 CACHE STRING "Debian revision of the package")
# The Maintainer field; set your own address when you publish the package.
set(ASYNCEXEC_DEB_MAINTAINER "asyncexec maintainers <asyncexec@example.org>"
  CACHE STRING "Maintainer of the Debian package")
# bookworm's debhelper (13.11) installs units in /lib/systemd/system; Debian 13 (trixie)
# finished the /usr merge and its lintian rejects files under /lib (aliased-location), so a
# build on Debian 13 or later (os-release of the build host) uses /usr/lib/systemd/system.
# systemd also reads PREFIX/lib/systemd/system for other prefixes (/usr/local).
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(_unitdir_default /lib/systemd/system)
  if(CMAKE_VERSION VERSION_GREATER_EQUAL 3.22)
    cmake_host_system_information(RESULT _os_id QUERY DISTRIB_ID)
    cmake_host_system_information(RESULT _os_version QUERY DISTRIB_VERSION_ID)
    if(_os_id STREQUAL "debian" AND _os_version MATCHES "^[0-9]+$"
        AND _os_version GREATER_EQUAL 13)
      set(_unitdir_default /usr/lib/systemd/system)
    endif()
  endif()
else()
  set(_unitdir_default ${CMAKE_INSTALL_PREFIX}/lib/systemd/system)
endif()
set(ASYNCEXEC_SYSTEMD_UNITDIR ${_unitdir_default} CACHE PATH "systemd system unit directory")
set(ASYNCEXEC_SYSUSERSDIR ${CMAKE_INSTALL_PREFIX}/lib/sysusers.d)

# The values the templates use.
set(ASYNCEXEC_SBINDIR ${CMAKE_INSTALL_FULL_SBINDIR})
set(ASYNCEXEC_CONFDIR ${CMAKE_INSTALL_FULL_SYSCONFDIR}/asyncexec)
set(ASYNCEXEC_CONF ${ASYNCEXEC_CONFDIR}/asyncexec.conf)
set(ASYNCEXEC_NGINX_SITE ${CMAKE_INSTALL_FULL_SYSCONFDIR}/nginx/sites-available/asyncexec)
set(ASYNCEXEC_DOCDIR ${CMAKE_INSTALL_FULL_DATADIR}/doc/asyncexec)
set(ASYNCEXEC_SYSUSERS ${ASYNCEXEC_SYSUSERSDIR}/asyncexec.conf)
set(ASYNCEXEC_DEB_VERSION ${PROJECT_VERSION}-${ASYNCEXEC_DEB_RELEASE})

set(_gen ${PROJECT_BINARY_DIR}/dist)
set(_src ${PROJECT_SOURCE_DIR}/scripts)
foreach(f asyncexec-fcgi.service asyncexec-expire.service asyncexec-notify.service)
  configure_file(${_src}/systemd/${f}.in ${_gen}/systemd/${f} @ONLY)
endforeach()
configure_file(${_src}/cron/asyncexec-expire.in ${_gen}/cron/asyncexec-expire @ONLY)
foreach(f postinst prerm postrm conffiles changelog)
  configure_file(${_src}/debian/${f}.in ${_gen}/debian/${f} @ONLY)
endforeach()

# Compressed documentation (gzip -9n: no name, no time stamp, reproducible).
set(_gz)
set(_gz_pairs)
set(_man8 asyncexec-fcgi.8 asyncexec-expire.8 asyncexec-admin.8 asyncexec-notify.8)
set(_man7 asyncexec-api.7 asyncexec-ops.7)
set(_man5 asyncexec.conf.5)
foreach(m ${_man8} ${_man7} ${_man5})
  list(APPEND _gz_pairs ${_src}/man/${m} ${_gen}/man/${m}.gz)
endforeach()
list(APPEND _gz_pairs ${_gen}/debian/changelog ${_gen}/doc/changelog.Debian.gz)
list(APPEND _gz_pairs ${PROJECT_SOURCE_DIR}/CHANGELOG.md ${_gen}/doc/changelog.gz)
list(LENGTH _gz_pairs _n)
math(EXPR _last "${_n} - 1")
foreach(i RANGE 0 ${_last} 2)
  math(EXPR j "${i} + 1")
  list(GET _gz_pairs ${i} _in)
  list(GET _gz_pairs ${j} _out)
  get_filename_component(_dir ${_out} DIRECTORY)
  add_custom_command(OUTPUT ${_out}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${_dir}
    COMMAND gzip -9nc ${_in} > ${_out}
    DEPENDS ${_in} VERBATIM)
  list(APPEND _gz ${_out})
endforeach()
add_custom_target(asyncexec_docs ALL DEPENDS ${_gz})

set(_rw OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
install(FILES ${_gen}/systemd/asyncexec-fcgi.service ${_gen}/systemd/asyncexec-expire.service
    ${_gen}/systemd/asyncexec-notify.service ${_src}/systemd/asyncexec-fcgi.socket ${_src}/systemd/asyncexec-expire.timer
  DESTINATION ${ASYNCEXEC_SYSTEMD_UNITDIR} PERMISSIONS ${_rw})
install(FILES ${_src}/debian/sysusers.conf DESTINATION ${ASYNCEXEC_SYSUSERSDIR}
  RENAME asyncexec.conf PERMISSIONS ${_rw})
# The configuration: 0640; the package gives it group asyncexec in postinst
# (dpkg-statoverride), once the group exists.
install(FILES ${_src}/examples/asyncexec.conf DESTINATION ${ASYNCEXEC_CONFDIR}
  PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ)
# The nginx site: available, not enabled.
install(FILES ${PROJECT_SOURCE_DIR}/nginx/asyncexec.conf
  DESTINATION ${CMAKE_INSTALL_FULL_SYSCONFDIR}/nginx/sites-available
  RENAME asyncexec PERMISSIONS ${_rw})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/sql/ DESTINATION ${CMAKE_INSTALL_DATADIR}/asyncexec/sql
  FILE_PERMISSIONS ${_rw})
foreach(sec 8 7 5)
  list(TRANSFORM _man${sec} PREPEND ${_gen}/man/ OUTPUT_VARIABLE _in)
  list(TRANSFORM _in APPEND .gz)
  install(FILES ${_in} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${sec} PERMISSIONS ${_rw})
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${_src}/debian/copyright
    ${_gen}/doc/changelog.Debian.gz ${_gen}/doc/changelog.gz
  DESTINATION ${CMAKE_INSTALL_DOCDIR} PERMISSIONS ${_rw})
# The examples the documents point to (asyncexec-api(7), asyncexec-ops(7), README.md).
install(FILES ${_gen}/cron/asyncexec-expire ${_src}/examples/asyncexec.conf
    ${_src}/examples/webhook-receiver.php ${_src}/examples/consumer.php
    ${_src}/examples/worker.sh
  DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples PERMISSIONS ${_rw})

# ---- CPack: the Debian package -------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME asyncexec)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${ASYNCEXEC_DEB_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "durable asynchronous request-reply service (FastCGI)")
set(CPACK_PACKAGE_DESCRIPTION "\
asyncexec answers a slow operation's request at once with 202 Accepted, a
correlation id and a secret poll token; backend workers claim the pending
work over HTTP and call back with the result, which is finalized exactly
once. It runs as a preforked FastCGI application behind nginx and keeps
every execution in MariaDB.
.
This package ships asyncexec-fcgi (socket-activated systemd service),
asyncexec-expire (expiry, rescue and purge; a systemd timer or cron),
asyncexec-admin (schema migrations, routes, keys and webhooks),
asyncexec-notify (the webhook sender: signed completion notifications;
a systemd service) and an nginx site.")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE ${ASYNCEXEC_DEB_RELEASE})
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# postinst: systemd-sysusers, else adduser; dpkg-statoverride is dpkg's own;
# deb-systemd-invoke (prerm, postinst) comes with init-system-helpers (essential).
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "nginx, mariadb-server")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${_gen}/debian/conffiles ${_gen}/debian/postinst ${_gen}/debian/prerm
  ${_gen}/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)

# Turns `zcoll_info -c` into zcoll(7), the page of the configuration variables: every
# "#"-opened block that ends in NAME=value is one variable (the "# " lines before
# "# default:" are its doc). The count must equal the one zcoll_info announces, so a
# change to the listing's format fails the build instead of shipping a short page.
# Variables: version (the project's), date (the page's date, YYYY-MM-DD).
function roff(s) {
  gsub(/\\/, "\\e", s)
  if (s ~ /^[.']/) s = "\\&" s
  return s
}
function value(s) {
  s = roff(s)
  gsub(/-/, "\\-", s)
  return s
}
BEGIN { expected = -1; n = 0 }
/^# zcoll configuration: [0-9]+ variables/ { expected = $4 + 0; next }
/^# algorithms this build accepts for ZCOLL_ALGO: / { sub(/^[^:]*: /, ""); algos = $0; next }
/^# transports this build knows for ZCOLL_TRANSPORT: / { sub(/^[^:]*: /, ""); tls = $0; next }
/^#$/ { doc = ""; have_default = 0; next }
/^# default:/ { dflt = substr($0, 12); sub(/^ /, "", dflt); have_default = 1; next }
/^# / { if (!have_default) doc = doc (doc == "" ? "" : " ") substr($0, 3); next }
/^ZCOLL_[A-Z0-9_]+=/ {
  if (!have_default) {
    printf "zcoll7.awk: line %d: %s has no '# default:' line above it\n", NR, $0 > "/dev/stderr"
    bad = 1
  }
  n++
  name[n] = substr($0, 1, index($0, "=") - 1)
  docs[n] = doc
  dflts[n] = dflt
  doc = ""; have_default = 0
  next
}
END {
  if (bad) exit 1
  if (expected < 0) {
    print "zcoll7.awk: zcoll_info -c has no '# zcoll configuration: N variables' line" > "/dev/stderr"
    exit 1
  }
  if (n == 0 || n != expected) {
    printf "zcoll7.awk: read %d variables, zcoll_info -c announced %d\n", n, expected > "/dev/stderr"
    exit 1
  }
  print ".\\\" Generated at build time from `zcoll_info -c` by man/zcoll7.awk: do not edit."
  printf ".TH ZCOLL 7 \"%s\" \"zcoll %s\" \"zcoll manual\"\n", date, version
  print ".SH NAME"
  print "zcoll \\- configuration variables of the zcoll allreduce library"
  print ".SH DESCRIPTION"
  print "Every setting of libzcoll is an environment variable"
  print ".BI ZCOLL_ NAME"
  print "and a field of a"
  print ".B zcoll_config_t"
  print "that a program sets with"
  print "\\fBzcoll_config_set(\\fIcfg\\fB, \"\\fINAME\\fB\", \\fIvalue\\fB)\\fR."
  print "A configuration created with"
  print ".B zcoll_config_create()"
  print "(or none passed to"
  print ".BR zcoll_comm_init() )"
  print "starts from the defaults below, overridden by the environment."
  print "An unknown"
  print ".B ZCOLL_"
  print "variable is warned about; a bad value is an error at initialization, never ignored."
  print ".PP"
  print ".B zcoll_info \\-c"
  print "prints every variable with its current value."
  printf "This build has %d.\n", n
  print ".SH VARIABLES"
  for (i = 1; i <= n; i++) {
    print ".TP"
    printf ".B %s\n", name[i]
    if (docs[i] != "") print roff(docs[i])
    print ".br"
    if (dflts[i] == "") print "Default: empty."
    else printf "Default: \\fB%s\\fR.\n", value(dflts[i])
  }
  if (algos != "" || tls != "") {
    print ".SH \"IN THIS BUILD\""
    if (algos != "") {
      print ".TP"
      print ".B ZCOLL_ALGO"
      printf "accepts: %s\n", roff(algos)
    }
    if (tls != "") {
      print ".TP"
      print ".B ZCOLL_TRANSPORT"
      printf "accepts: %s\n", roff(tls)
    }
  }
  print ".SH SEE ALSO"
  print ".BR zcoll_info (1),"
  print ".BR zcoll_run (1),"
  print ".BR zcoll_perf (1)"
}

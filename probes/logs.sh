# shellcheck shell=sh
# logs: the files asked for, each as its size, mtime, owner, last lines and error lines.
# Set by probes/logs.py: log_lines, tail_bytes, line_chars, errors_kept (first and last N
# error lines sent), error_pattern (grep -i -E), per_glob (files per glob), per_process (open files per focus process), globs and
# expected (one per line), focus_most (empty: no --focus). Every line of file content is
# sent behind "|", so no log line can pass for a record.
echo "limits $log_lines $tail_bytes $line_chars $errors_kept"
while read -r _a _b _; do [ "$_a" = btime ] && echo "btime $_b"; done </proc/stat
echo "clock $(date +%s)"
echo "clk_tck $(getconf CLK_TCK 2>/dev/null)"

# _lg_emit SOURCE NAME FILE: one file's record, stat, tail and error lines.
_lg_emit() {
  printf 'file %s %s\n' "$1" "$2"
  if [ ! -r "$3" ]; then echo unreadable; return; fi
  stat -L -c 'stat %s %Y %u %U' -- "$3" 2>/dev/null
  case $2 in *.gz | *.xz | *.zst | *.bz2 | *.lz4) echo compressed; return ;; esac
  echo tail
  tail -c "$tail_bytes" -- "$3" 2>/dev/null | awk -v n="$log_lines" -v w="$line_chars" '
    { b[NR % n] = $0 }
    END { s = NR - n + 1; if (s < 1) s = 1
          for (i = s; i <= NR; i++) print "|" substr(b[i % n], 1, w)
          print "tail_read " NR }'
  echo errors
  grep -n -a -i -E -e "$error_pattern" -- "$3" 2>/dev/null | awk -v k="$errors_kept" -v w="$line_chars" '
    { if (NR <= k) print "|" substr($0, 1, w); else b[NR % k] = $0 }
    END { s = NR - k + 1; if (s <= k) s = k + 1
          for (i = s; i <= NR; i++) print "|" substr(b[i % k], 1, w)
          print "errors_count " NR }'
}
# _lg_glob GLOB: the newest per_glob regular files it matches.
_lg_glob() {
  _g=$1
  # shellcheck disable=SC2088 # the operator's ~/ is expanded here
  case $_g in '~/'*) _g=$HOME/${_g#??} ;; esac
  printf 'glob %s\n' "$_g"
  # shellcheck disable=SC2086 # the glob expands here, on purpose
  (IFS=; ls -1td -- $_g 2>/dev/null) | {
    _m=0
    while IFS= read -r _f; do
      [ -f "$_f" ] || continue
      _m=$((_m + 1))
      if [ "$_m" -gt "$per_glob" ]; then printf 'glob_more %s\n' "$_g"; break; fi
      _lg_emit glob "$_f" "$_f"
    done
    [ "$_m" -gt 0 ] || printf 'glob_empty %s\n' "$_g"
  }
}
# _lg_expect PATH: a file that should be there; its absence is the news.
_lg_expect() {
  _e=$1
  # shellcheck disable=SC2088
  case $_e in '~/'*) _e=$HOME/${_e#??} ;; esac
  if [ -e "$_e" ]; then printf 'expected_present %s\n' "$_e"; _lg_emit expected "$_e" "$_e"
  elif [ -d "${_e%/*}/" ]; then printf 'expected_missing %s\n' "$_e"
  else printf 'expected_missing_directory %s\n' "$_e"
  fi
}

_fx_fp=
if [ -n "$focus_most" ]; then
  # shellcheck source=focus.sh
  . ./focus.sh
  _fx_focus "$focus_most"
  for _p in $_fx_fp; do
    _l=; read -r _l <"/proc/$_p/stat" 2>/dev/null && printf 'focus_pid %s %s\n' "$_p" "$_l"
  done
  if [ "$_fx_fn" -gt "$focus_most" ]; then printf 'focus_capped %s\n' "$_fx_fn"; fi
  if [ -n "$_fx_fe" ]; then printf 'focus_error %s\n' "$_fx_fe"; fi
fi
while IFS= read -r _g; do [ -z "$_g" ] || _lg_glob "$_g"; done <<_FX_GLOBS_
$globs
_FX_GLOBS_
while IFS= read -r _e; do [ -z "$_e" ] || _lg_expect "$_e"; done <<_FX_EXPECTED_
$expected
_FX_EXPECTED_
# The regular files each focus process holds open for writing: logs nobody configured.
for _p in $_fx_fp; do
  _o=0
  for _d in /proc/"$_p"/fd/*; do
    [ -f "$_d" ] || continue
    _fl=
    while read -r _a _b; do [ "$_a" = flags: ] && _fl=$_b; done 2>/dev/null \
      <"/proc/$_p/fdinfo/${_d##*/}"
    case $_fl in '' | *[!0-7]*) continue ;; esac
    [ $((0$_fl & 3)) -ne 0 ] || continue
    _o=$((_o + 1))
    if [ "$_o" -gt "$per_process" ]; then printf 'open_capped %s\n' "$_p"; break; fi
    _lg_emit "open:$_p:${_d##*/}" "$(readlink "$_d" 2>/dev/null)" "$_d"
  done
done

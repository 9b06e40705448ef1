# shellcheck shell=sh
# processes.again (section processes_again): the second snapshot of the process table
# (every process's stat), gap_cs hundredths of a second after the first. processes.sh
# wrote the first one's /proc/uptime reading in .t and its separator nonce in .s; the
# sections run since then have filled part of the gap, so this sleeps only what remains of
# it (all of it when .t is missing), never less. Set by probes/processes.py: gap_cs, batch
# (processes per head), stat_cap (bytes read of each stat); _dump is processes.dump.sh.
s=.s; u=
{ read -r u <"$s"; } 2>/dev/null
if [ -z "$u" ]; then
  { read -r u </proc/sys/kernel/random/uuid; } 2>/dev/null
  u=${u%-*-*}; [ -n "$u" ] || u="nouuid-$$"
  printf '%s\n' "$u" >"$s" || exit 70
fi
echo "nonce $u"
# c: an uptime reading ("1648.38") in hundredths, empty when it is not one. Leading zeros
# go first: shell arithmetic reads "08" as octal.
_cs() {
  c=${1%%.*}; f=${1#"$c"}; f=${f#.}00; f=${f%"${f#??}"}
  case $c in '' | *[!0-9]*) c=; return ;; esac
  case $f in *[!0-9]*) c=; return ;; esac
  c=${c#"${c%%[!0]*}"}; f=${f#0}
  c=$((${c:-0} * 100 + f))
}
w=0
if [ "$gap_cs" -gt 0 ]; then
  t=; { read -r t <.t; } 2>/dev/null
  up=; { read -r up _ </proc/uptime; } 2>/dev/null
  _cs "$t"; t=$c; _cs "$up"
  # One hundredth more: both readings are cut to hundredths.
  if [ -n "$t" ] && [ -n "$c" ]; then w=$((gap_cs - (c - t) + 1)); else w=$gap_cs; fi
fi
if [ "$w" -gt 0 ]; then
  f=$((w % 100)); case $f in ?) f=0$f ;; esac
  sleep "$((w / 100)).$f" 2>/dev/null || sleep "$(((w + 99) / 100))"
fi
{ read -r up _ </proc/uptime; } 2>/dev/null; echo "snapshot 2 $up"
_dump "$stat_cap" stat
echo end

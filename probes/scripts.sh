# shellcheck shell=sh
# scripts: the shell scripts that supervise zombies and the focus processes, read where they
# run; nothing is executed. Set by probes/scripts.py: cap (bytes read per script), most
# (scripts read), zombies_listed, shells_most (shell processes looked at), focus_most
# (empty: no --focus), requested (the --script paths, one per line). Values that may hold
# any byte go out framed by their line count (_field, _blob), so no script fakes a record.
home=$PWD; nl='
'
echo "scripts 1 $cap $most"
_stat() {
  st=; pp=; cm=; _l=
  read -r _l 2>/dev/null <"/proc/$1/stat" || [ -n "$_l" ] || return 1
  cm=${_l#*(}; cm=${cm%)*}
  # shellcheck disable=SC2086 # the fields after the name: numbers and a state letter
  set -- ${_l##*) }
  st=$1; pp=$2
}
_blob() { _n=$(wc -l <"$2"); printf '%s %s\n' "$1" $((_n + 0)); cat "$2"; printf '\n'; }
_field() {
  case $2 in
    *"$nl"*) printf '%s' "$2" >v; _blob "$1" v ;;
    *) printf '%s 0\n%s\n' "$1" "$2" ;;
  esac
}
_read_script() {
  _field path "$2"; printf 'via %s\n' "$3"
  case $seen in *"$nl$2$nl"*) echo same; return ;; esac
  seen="$seen$2$nl"
  if [ "$nread" -ge "$most" ]; then echo "error cap"; return; fi
  nread=$((nread + 1))
  if [ ! -e "$1" ]; then echo "error missing"; return; fi
  if [ ! -f "$1" ]; then echo "error not_regular"; return; fi
  _s=$(wc -c <"$1" 2>/dev/null) || { echo "error unreadable"; return; }
  printf 'size %s\n' $((_s + 0))
  head -c "$cap" "$1" >sc 2>/dev/null
  _blob content sc
}
zp=' '; nz=0
for s in /proc/[0-9]*/stat; do
  p=${s#/proc/}; p=${p%/stat}
  _stat "$p" || continue
  [ "$st" = Z ] || continue
  nz=$((nz + 1))
  case $cm in *"$nl"*) cm='?' ;; esac
  if [ "$nz" -le "$zombies_listed" ]; then printf 'zombie %s %s %s\n' "$p" "$pp" "$cm"; fi
  case $zp in *" $pp "*) ;; *) zp="$zp$pp " ;; esac
done
echo "zombies $nz"
fm=' '
if [ -n "$focus_most" ]; then
  # shellcheck source=focus.sh
  . ./focus.sh
  _fx_focus "$focus_most"
  if [ -n "$_fx_fe" ]; then _field focus_error "$_fx_fe"; fi
  for p in $_fx_fp; do fm="$fm$p "; echo "focus $p"; done
fi
anc=' '
for f in $fm; do
  p=$f; d=0
  while [ "$d" -lt 64 ] && _stat "$p" && [ -n "$pp" ] && [ "$pp" -gt 0 ]; do
    case $anc in *" $pp "*) break ;; esac
    anc="$anc$pp "; p=$pp; d=$((d + 1))
  done
done
cand=' '; nc=0
for p in $zp $fm $anc; do
  case $cand in *" $p "*) continue ;; esac
  _stat "$p" || continue
  case $cm in bash | sh | dash | zsh | ash | busybox | ksh | mksh) ;; *) continue ;; esac
  if [ "$nc" -ge "$shells_most" ]; then echo "skipped $p"; continue; fi
  cand="$cand$p "; nc=$((nc + 1))
done
seen=$nl; nread=0
for p in $cand; do
  _stat "$p" || { echo "gone $p"; continue; }
  r=
  case $zp in *" $p "*) r="$r zombie_parent" ;; esac
  case $fm in *" $p "*) r="$r focus" ;; esac
  case $anc in *" $p "*) r="$r focus_ancestor" ;; esac
  echo "process $p $pp$r"
  _field comm "$cm"
  cat "/proc/$p/cmdline" >cl 2>/dev/null
  _blob cmdline cl
  tr '\000' '\n' <cl >args
  i=0; idx=; mode=stdin; skip=; ended=; base=
  while IFS= read -r a; do
    i=$((i + 1))
    if [ "$i" -eq 1 ]; then base=${a##*/}; continue; fi
    if [ -n "$skip" ]; then skip=; continue; fi
    if [ "$i" -eq 2 ] && [ "$base" = busybox ]; then continue; fi
    if [ -n "$ended" ]; then idx=$i; break; fi
    case $a in
      --) ended=1 ;;
      --rcfile|--init-file) skip=1 ;;
      --*) ;;
      -) break ;;
      -*c*) mode='command'; break ;;
      -*s*) break ;;
      [-+]*[oO]*) skip=1 ;;
      [-+]?*) ;;
      *) idx=$i; break ;;
    esac
  done <args
  if [ -z "$idx" ]; then _field no_script "$mode"; continue; fi
  echo "script_index $((idx - 1))"
  _field arg "$a"
  cw=
  if cd -P "/proc/$p/cwd" 2>/dev/null; then cw=$PWD; fi
  cd "$home" || exit 70
  _field cwd "$cw"
  case $a in /*) ab=$a ;; *) ab=${cw:+$cw/}$a ;; esac
  if [ "$cm" = bash ] && [ -f "/proc/$p/fd/255" ]; then
    shown=$(readlink "/proc/$p/fd/255" 2>/dev/null) || shown=
    _read_script "/proc/$p/fd/255" "${shown:-$ab}" fd255
  else
    case $a in
      /*) if [ -e "/proc/$p/root$a" ]; then _read_script "/proc/$p/root$a" "$ab" root
          else _read_script "$a" "$ab" path; fi ;;
      *) _read_script "/proc/$p/cwd/$a" "$ab" cwd ;;
    esac
  fi
done
_requested() {
  echo requested; _field arg "$1"
  case $1 in /*) ab=$1 ;; *) ab=$HOME/$1 ;; esac
  _read_script "$ab" "$ab" path
}
while IFS= read -r a; do [ -z "$a" ] || _requested "$a"; done <<_FX_REQUESTED_
$requested
_FX_REQUESTED_

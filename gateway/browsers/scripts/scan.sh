# Every browser process on this host, one record a line: run by the gateway with
# `sh -c`, one exec per scan, POSIX sh and builtins only but one `tr` per browser
# (Linux) or one `ps` (macOS). Renderers, GPU and utility processes are skipped:
# on Linux by their parent (another browser process), everywhere by `--type=`.
# Fields are separated by US (\037); a Linux command line's arguments by RS (\036).
# Record kinds: S (the scan: system, boot time, our uid), P (a browser process),
# T (truncated: more browsers than the cap). Output stays bounded: at most CAP
# browsers, each command line cut by the gateway.
US=$(printf '\037'); AS=$(printf '\036'); CAP=64; n=0
is_browser() {
  case $1 in
    chrome|chromium|chromium-browse|chrome-headless|chrome-headless-s|headless_shell|msedge|\
    Chromium|"Google Chrome"*|"Microsoft Edge"*) return 0 ;;
  esac
  return 1
}
active_port() {  # $1/DevToolsActivePort's two lines; "-" absent, "!" profile unreadable
  f="$1/DevToolsActivePort"
  if [ -r "$f" ]; then { read -r l1; read -r l2; } < "$f" 2>/dev/null; dtap="$l1 $l2"
  elif [ -e "$f" ] || ! [ -d "$1" ] || ! [ -x "$1" ]; then dtap=!
  else dtap=-; fi
}
option() {  # the value of --$1= in $cmd (arguments separated by $2), or empty
  case $cmd in *"$2--$1="*) v=${cmd#*"$2--$1="}; v=${v%%"$2"*} ;; *) v= ;; esac
}
emit() {  # one P record for $cmd (arguments separated by $1); false once over the cap
  option user-data-dir "$1"
  if [ -z "$v" ]; then dtap=?; else active_port "$v"; fi
  n=$((n + 1)); [ "$n" -gt "$CAP" ] && { echo T; return 1; }
  echo "P${US}$2${US}$3${US}$4${US}$5${US}$6${US}$7${US}$dtap${US}$cmd"
}
# CSGW_SCAN=ps takes the ps branch on Linux too (procps prints the same columns), so
# the macOS path is exercised on a Linux test host.
if [ -r /proc/self/stat ] && [ "${CSGW_SCAN:-}" != ps ]; then
  btime=0; me=
  while read -r key value _; do [ "$key" = btime ] && btime=$value; done < /proc/stat
  while read -r key value _; do [ "$key" = Uid: ] && me=$value; done < /proc/self/status
  echo "S${US}linux${US}$btime${US}$me"
  for d in /proc/[0-9]*; do
    read -r stat < "$d/stat" 2>/dev/null || continue
    comm=${stat#*\(}; comm=${comm%\)*}
    is_browser "$comm" || continue
    set -- ${stat##*) }
    [ "$1" = Z ] && continue  # a zombie (an init that does not reap leaves many)
    ppid=$2; start=${20}
    pcomm=; read -r pstat < "/proc/$ppid/stat" 2>/dev/null && { pcomm=${pstat#*\(}; pcomm=${pcomm%\)*}; }
    is_browser "$pcomm" && continue
    cmd=$(tr '\0' '\036' < "$d/cmdline" 2>/dev/null) || continue
    [ -n "$cmd" ] || continue  # exiting: its command line is gone already
    case $cmd in *"$AS--type="*) continue ;; esac
    uid=
    while read -r key value _; do [ "$key" = Uid: ] && uid=$value; done < "$d/status" 2>/dev/null
    if [ "$d/ns/net" -ef /proc/self/ns/net ]; then ns=same; else ns=other; fi
    emit "$AS" "${d#/proc/}" "$ppid" "$start" "$uid" "$ns" "$pcomm" || break
  done
else
  echo "S${US}ps${US}0${US}$(id -u)"
  ps -axo pid=,ppid=,uid=,lstart=,command= 2>/dev/null | while read -r pid ppid uid w m d t y cmd; do
    case $cmd in *" --type="*) continue ;; esac
    case ${cmd%% --*} in *crashpad*|*driver*) continue ;; esac  # helpers, not browsers
    case ${cmd%% --*} in *[Cc]hrom*|*[Ee]dge*|*headless_shell*) ;; *) continue ;; esac
    emit " " "$pid" "$ppid" "$w $m $d $t $y" "$uid" same "" || break
  done
fi
true

# Every browser process on this host, one record a line: run by the gateway with
# `sh -c`, one exec per scan, POSIX sh builtins but for one grep and one tr (Linux)
# or one ps (macOS), however many browsers run. Renderers, GPU and utility processes are skipped:
# on Linux by their parent (another browser process), everywhere by `--type=`.
# Fields are separated by US (\037); a Linux command line's arguments by RS (\036).
# Record kinds: S (the scan: system, 0, our uid), P (a browser process),
# T (truncated: more browsers than the cap). Output stays bounded: at most CAP
# browsers, each command line cut by the gateway.
US=$(printf '\037'); AS=$(printf '\036'); CAP=64; n=0; IFS0=$IFS
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
  me=
  while read -r key value _; do [ "$key" = Uid: ] && me=$value; done < /proc/self/status
  echo "S${US}linux${US}0${US}$me"
  # Pass 1: which processes are browsers (not their children: renderers, GPU, …), and
  # what /proc says of each; from one ps, or where there is none from /proc itself
  # (dash reads a file a byte at a time: the short comm first, stat only for browsers).
  # Pass 2: all their command lines with one grep and one tr.
  # Start times: ps's (local time, to the second), else boot time + the clock ticks
  # (USER_HZ, 100 on every Linux) of /proc/PID/stat, as seconds since the epoch.
  list_proc() {
    btime=0
    while read -r key value _; do [ "$key" = btime ] && btime=$value; done < /proc/stat
    for d in /proc/[0-9]*; do
      read -r comm < "$d/comm" 2>/dev/null || continue
      is_browser "$comm" || continue
      read -r stat < "$d/stat" 2>/dev/null || continue
      set -- ${stat##*) }
      uid=; while read -r key value _; do [ "$key" = Uid: ] && uid=$value; done < "$d/status"
      echo "${d#/proc/} $2 $1 $uid epoch:$((btime + ${20} / 100)) - - - - $comm"
    done
  }
  if ps -o pid= -p $$ >/dev/null 2>&1; then
    lister="ps -e -o pid= -o ppid= -o stat= -o uid= -o lstart= -o comm="
  else lister=list_proc; fi
  $lister 2>/dev/null | {
  files=
  while read -r pid ppid state uid w m dd t y comm; do
    is_browser "$comm" || continue
    case $pid$ppid$uid in *[!0-9]*) continue ;; esac
    eval "b_$pid=1; parent=\${b_$ppid-}"
    [ -n "$parent" ] && continue  # a child of a browser (ps lists parents first)
    case $state in Z*) continue ;; esac  # a zombie (an init that does not reap leaves many)
    d=/proc/$pid
    if [ "$d/ns/net" -ef /proc/self/ns/net ]; then ns=same; else ns=other; fi
    pcomm=; read -r pcomm < "/proc/$ppid/comm" 2>/dev/null
    info="$ppid${US}$w $m $dd $t $y${US}$uid${US}$ns${US}$pcomm"
    eval "i_$pid=\$info"  # the name is digits only; the value is not evaluated
    files="$files $d/cmdline"
  done
  # grep -H prefixes every line with its file, so an argument holding a newline cannot
  # pose as another process: its lines carry its own pid, and only the first is used.
  [ -n "$files" ] && grep -aH '' $files 2>/dev/null | tr '\0' '\036' | while IFS= read -r line; do
    case $line in /proc/*/cmdline:?*) ;; *) continue ;; esac
    pid=${line#/proc/}; pid=${pid%%/*}; cmd=${line#*/cmdline:}
    case $pid in ''|*[!0-9]*) continue ;; esac
    eval "info=\${i_$pid-}; unset i_$pid"
    [ -n "$info" ] || continue
    # (a child may have rewritten its command line into one string with spaces)
    case $cmd in *"--type="*) continue ;; esac
    set -f; IFS=$US; set -- $info; IFS=$IFS0; set +f
    emit "$AS" "$pid" "$1" "$2" "$3" "$4" "$5" || break
  done
  }
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

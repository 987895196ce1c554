# The shares on this host for this user (what `chrome-ssh-gateway share` made here):
# one record a line, run by the gateway with `sh -c`, one exec per look. POSIX sh and
# stat/head/tr. Fields are separated by US (\037). Record kinds: D (the directory:
# its absolute path, "owner-uid mode", our uid; "none" when it does not exist, "link"
# when it is a symbolic link), M (a manifest: its file's name less .json, S when
# <name>.sock is a socket (not a link) else -, the file's first bytes), T (truncated:
# more manifests than the cap). Names and contents are printed as ASCII with anything
# else blanked (a newline would forge a record). The gateway validates it all.
US=$(printf '\037'); CAP=64; n=0
d="$HOME/.cache/chrome-ssh-gateway/shared"
me=$(id -u)
if [ -L "$d" ]; then echo "D${US}$d${US}link${US}$me"; exit 0; fi
if [ ! -d "$d" ]; then echo "D${US}$d${US}none${US}$me"; exit 0; fi
info=$(stat -c '%u %a' "$d" 2>/dev/null || stat -f '%u %Lp' "$d" 2>/dev/null)
echo "D${US}$d${US}$info${US}$me"
for f in "$d"/*.json; do
  [ -f "$f" ] && [ ! -L "$f" ] || continue
  n=$((n + 1)); [ "$n" -gt "$CAP" ] && { echo T; break; }
  name=${f##*/}; name=${name%.json}
  s=-; [ -S "$d/$name.sock" ] && [ ! -L "$d/$name.sock" ] && s=S
  printf 'M%s%s%s%s%s' "$US" "$(printf %s "$name" | LC_ALL=C tr -c '[:print:]' ' ')" \
    "$US" "$s" "$US"
  head -c 4097 "$f" | LC_ALL=C tr -c '[:print:]' ' '
  echo
done

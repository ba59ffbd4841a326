package cmd

// Examples of each command's --help. Each block runs as written, in bash,
// on one machine (127.0.0.1 stands for the receiver's address): the e2e
// test TestHelpExamples runs every block in an empty directory and wants
// exit status 0: help that teaches. No line is longer than
// manpage.ExampleWidth, so that the man pages read at 80 columns do not
// cut them (TestManPagesFit80Columns).
const (
	rootExample = `  # Try it on one machine: a receiver that prints the keys it would
  # type, and a sender playing a line of text to it
  keyrelay recv --inject log --listen 127.0.0.1:7575 &
  echo 'type "hello"' | keyrelay send --to 127.0.0.1 --script -
  kill $!
  # Two machines, rehearsed on this one: the machine that types has
  # files of its own here (--identity, --peers), and yes answers for
  # the person comparing the codes (--scripted; between two machines,
  # run pair in a terminal on each and look)
  yes | keyrelay pair --listen 127.0.0.1:7575 --name typer --scripted \
    --from 127.0.0.1 --identity typer.id --peers typer.peers &
  yes | keyrelay pair 127.0.0.1 --name keyboard --scripted
  wait
  keyrelay recv --inject log --identity typer.id --peers typer.peers &
  echo 'type "hello"' | keyrelay send --to typer --script -
  kill $!`

	sendExample = `  # A receiver that prints what it would type (here, to try these)
  keyrelay recv --inject log --listen 127.0.0.1:7575 &
  # Text arrives as the same text whatever the receiver's layout
  echo 'type "Grüße"' | keyrelay send --to 127.0.0.1 --script -
  # A key script, as in CI: --wait gives a receiver started at the same
  # time 10s to answer; exit status 3: not delivered, nothing typed
  printf 'tap KeyA\nhold ShiftLeft 200ms\n' > keys.txt
  keyrelay send --to 127.0.0.1 --wait 10s --script keys.txt
  kill $!`

	recvExample = `  # Print the keys as JSON lines instead of typing them (no display)
  keyrelay recv --inject log --listen 127.0.0.1:7575 &
  echo 'tap KeyA' | keyrelay send --to 127.0.0.1 --script -
  kill $!
  # To type into this X session instead, from one network only, give
  # --inject x11 --allow 192.168.1.0/24`

	keygenExample = `  # Then copy it to the other machine
  keyrelay keygen --out keyrelay.key
  # A new key: both ends need it again
  keyrelay keygen --out keyrelay.key --force
  # Print it instead
  keyrelay keygen`

	impairExample = `  keyrelay keygen --out demo.key
  export KEYRELAY_KEY_FILE=demo.key
  keyrelay recv --listen 127.0.0.1:7575 --inject log &
  keyrelay impair --listen 127.0.0.1:7576 --to 127.0.0.1:7575 \
    --loss 0.3 --delay 20ms --jitter 5ms &
  echo 'type "through a bad link"' |
    keyrelay send --to 127.0.0.1:7576 --script -
  kill %1 %2`

	keysExample = `  keyrelay keys
  keyrelay keys | grep -i shift`

	configExample = `  keyrelay config                         # every command's settings
  KEYRELAY_SEND_TO=127.0.0.1 keyrelay config send`

	doctorExample = `  # Can this machine receive keys as JSON lines, and send a script?
  keyrelay doctor --inject log --input script
  # With a receiver running here, the receiving role finds it on its
  # port, and the sending role makes a round trip to each destination
  keyrelay recv --inject log &
  keyrelay doctor --role recv --inject log
  KEYRELAY_SEND_TO=127.0.0.1 keyrelay doctor --input script
  kill $!`

	versionExample = `  keyrelay version`

	idExample = `  keyrelay id                           # key and fingerprint, one line
  keyrelay id | cut -d' ' -f1           # the key alone, to pair
  keyrelay id --identity demo.identity  # an identity file of its own`

	peersExample = `  export KEYRELAY_PEERS=demo-peers.toml KEYRELAY_IDENTITY=demo.identity
  # other.identity stands for the other machine
  keyrelay id --identity other.identity > other.id
  keyrelay peers add mediapc "$(cut -d' ' -f1 other.id)" \
    --addr mediapc.lan
  keyrelay peers
  keyrelay peers remove mediapc`

	pairExample = `  # Between two machines: 'keyrelay pair' on one, 'keyrelay pair
  # THAT-HOST' on the other, and answer y on both if both screens show
  # the same code. Here both ends run on one machine, each with files of
  # its own, and 'yes' answers for the person (--scripted: nothing is
  # compared, only for trying; the waiting end takes a request --from
  # the one address named)
  yes | keyrelay pair --listen 127.0.0.1:7599 --name b --scripted \
    --from 127.0.0.1 --identity b.identity --peers b-peers.toml &
  yes | keyrelay pair 127.0.0.1:7599 --name a --scripted \
    --identity a.identity --peers a-peers.toml
  wait
  keyrelay peers --peers a-peers.toml   # b, with its key and address`

	switchExample = `  # Two receivers here, and a send whose keys go to one at a time; its
  # script comes from a FIFO this shell holds open (fd 3)
  keyrelay recv --inject log --listen 127.0.0.1:7575 &
  keyrelay recv --inject log --listen 127.0.0.1:7576 &
  mkfifo keys.fifo
  keyrelay send --switch --script keys.fifo \
    --to a=127.0.0.1:7575,b=127.0.0.1:7576 &
  exec 3>keys.fifo
  until keyrelay status --pid $! >/dev/null 2>&1; do sleep 0.1; done
  keyrelay switch b                # keys go to b only
  echo 'tap KeyB' >&3
  keyrelay switch --pid $! local   # to none (--pid: one of several)
  keyrelay switch B                # to b again: names ignore case
  exec 3>&-                        # the script ends, and so does send
  wait $!
  kill %1 %2`

	statusExample = `  # A send running, its script from a FIFO this shell holds open
  keyrelay recv --inject log --listen 127.0.0.1:7575 &
  mkfifo keys.fifo
  keyrelay send --to 127.0.0.1 --script keys.fifo &
  exec 3>keys.fifo
  until keyrelay status --pid $! 2>/dev/null; do sleep 0.1; done
  keyrelay status --json   # one JSON object per send
  exec 3>&-                # the script ends, and so does send
  wait $!
  kill %1`

	completionExample = `  # bash (with the bash-completion package), this shell only
  source <(keyrelay completion bash)
  # Every new bash of this user
  d=~/.local/share/bash-completion/completions
  mkdir -p $d && keyrelay completion bash > $d/keyrelay`

	zshExample = `  mkdir -p ~/.zfunc && keyrelay completion zsh > ~/.zfunc/_keyrelay
  # then in ~/.zshrc: fpath=(~/.zfunc $fpath); autoload -U compinit
  # and compinit`

	fishExample = `  mkdir -p ~/.config/fish/completions
  keyrelay completion fish > ~/.config/fish/completions/keyrelay.fish`

	powershellExample = `  keyrelay completion powershell > keyrelay.ps1
  # then in your PowerShell profile: . ./keyrelay.ps1`
)

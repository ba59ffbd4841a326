package cmd

// Examples of each command's --help. Each block runs as written, in bash,
// on one machine (127.0.0.1 stands for the receiver's address): the e2e
// test TestHelpExamples runs every block in an empty directory and wants
// exit status 0 (issue 13 must-have 5: help that teaches). No line is
// longer than manpage.ExampleWidth (73 columns), so that the man pages
// read at 80 columns do not cut them (TestManPagesFit80Columns).
const (
	rootExample = `  # Try it on one machine: a receiver that prints the keys it would type,
  # and a sender playing a line of text to it
  keyrelay keygen --out demo.key
  keyrelay recv --key-file demo.key --inject log &
  echo 'type "hello"' |
    keyrelay send --key-file demo.key --to 127.0.0.1 --script -
  kill %1
  # Between two machines: copy demo.key to both; on the one that types,
  #   keyrelay recv --key-file demo.key
  # and on the other,
  #   keyrelay send --key-file demo.key --to THAT-HOST`

	sendExample = `  # A receiver to send to (on one machine, to try these)
  keyrelay keygen --out demo.key
  export KEYRELAY_KEY_FILE=demo.key
  keyrelay recv --inject log &
  # Type text: it arrives as the same text whatever the receiver's layout
  echo 'type "Grüße"' | keyrelay send --to 127.0.0.1 --script -
  # Play a key script (the format: keyrelay help script)
  printf 'tap KeyA\nhold ShiftLeft 200ms\n' > keys.txt
  keyrelay send --to 127.0.0.1 --script keys.txt
  # In a CI script, with a receiver started at the same time: --wait
  # gives it 10s to answer before the script plays; exit status 3 means
  # not delivered (with --wait, nothing typed anywhere)
  keyrelay send --to 127.0.0.1 --wait 10s --script keys.txt ||
    echo "keys not delivered ($?)"
  kill %1`

	recvExample = `  # Print the keys as JSON lines instead of typing them (no display)
  keyrelay keygen --out demo.key
  keyrelay recv --key-file demo.key --inject log \
    --listen 127.0.0.1:7575 &
  echo 'tap KeyA' |
    keyrelay send --key-file demo.key --to 127.0.0.1 --script -
  kill %1
  # Type into this X session, from one network only:
  #   keyrelay recv --key-file demo.key --inject x11 \
  #     --allow 192.168.1.0/24`

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

	doctorExample = `  keyrelay keygen --out demo.key
  # Can this machine receive keys as JSON lines, and send a script?
  keyrelay doctor --key-file demo.key --inject log --input script
  # With a receiver running here: the receiving role finds it on its
  # port; the sending role makes a round trip to each of send's
  # destinations ([send] to, KEYRELAY_SEND_TO or --to), or to --peer
  keyrelay recv --key-file demo.key --inject log &
  keyrelay doctor --key-file demo.key --role recv --inject log
  KEYRELAY_SEND_TO=127.0.0.1 \
    keyrelay doctor --key-file demo.key --input script
  keyrelay doctor --key-file demo.key --role send --input script \
    --peer 127.0.0.1
  kill %1`

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
)

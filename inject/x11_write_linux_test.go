package inject

import (
	"bytes"
	"errors"
	"io"
	"net"
	"path/filepath"
	"testing"
)

// unixPair is both ends of a Unix stream socket, as an X connection is.
func unixPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	l, err := net.Listen("unix", filepath.Join(t.TempDir(), "x"))
	if err != nil {
		t.Skipf("no Unix sockets here: %v", err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		accepted <- c
	}()
	client, err = net.Dial("unix", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// TestRawStreamWritesAll: keyConn's raw writes (x11_write_linux.go) reach
// the server byte for byte, a request at a time and a write longer than
// the socket takes at once (written on as the server reads), and a write
// to a closed connection fails.
func TestRawStreamWritesAll(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int
	}{
		{"one FakeInput", 36},
		{"more than the socket buffer", 8 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, server := unixPair(t)
			w := newRawStream(client)
			if w == nil {
				t.Fatal("a Unix socket has no raw writer")
			}
			want := make([]byte, tc.size)
			for i := range want {
				want[i] = byte(i * 7)
			}
			got := make(chan []byte)
			go func() {
				b := make([]byte, len(want))
				io.ReadFull(server, b)
				got <- b
			}()
			if n, err := w.Write(want); n != len(want) || err != nil {
				t.Fatalf("Write: %d, %v; want %d", n, err, len(want))
			}
			if !bytes.Equal(<-got, want) {
				t.Error("the server read other bytes than were written")
			}
		})
	}
	client, _ := unixPair(t)
	w := newRawStream(client)
	client.Close()
	var op *net.OpError
	if _, err := w.Write([]byte{1}); !errors.As(err, &op) || !errors.Is(err, net.ErrClosed) {
		t.Errorf("Write on a closed connection: %v, want a *net.OpError wrapping net.ErrClosed", err)
	}
}

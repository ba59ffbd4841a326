package config

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// DefaultPort is the UDP port recv listens on and send sends to when an
// address has no port.
const DefaultPort = "7575"

// SplitList splits comma-separated values of a repeatable flag (--to
// a:1,b:2, like KEYRELAY_SEND_TO), dropping empty ones.
func SplitList(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, e := range strings.Split(v, ",") {
			if e = strings.TrimSpace(e); e != "" {
				out = append(out, e)
			}
		}
	}
	return out
}

// CheckPort checks the port of a HOST:PORT (a number in lo..65535, or a
// service name the system knows) and returns what is wrong, or "".
func CheckPort(port string, lo int) string {
	if n, err := strconv.Atoi(port); err == nil {
		if n < lo || n > 65535 {
			return fmt.Sprintf("port %d out of range %d..65535", n, lo)
		}
		return ""
	}
	if _, err := net.LookupPort("udp", port); err != nil {
		return fmt.Sprintf("port %q is not a number %d..65535", port, lo)
	}
	return ""
}

// ListenAddr reads recv's --listen: [HOST]:PORT, or a bare port, which
// listens on every address.
func ListenAddr(given string) (string, error) {
	v := given
	if _, err := strconv.Atoi(v); err == nil {
		v = ":" + v
	}
	_, port, err := net.SplitHostPort(v)
	want := ""
	if err != nil {
		want = "want [HOST]:PORT, like :" + DefaultPort + " (every address), 127.0.0.1:" + DefaultPort + " or [::1]:" + DefaultPort + ", or a bare port"
	} else if want = CheckPort(port, 0); want != "" {
		want += " (0: any free port)"
	}
	if want != "" {
		return "", BadValue("listen", want, fmt.Sprintf("--listen %q: %s", given, want))
	}
	return v, nil
}

// ParseAllow reads recv's --allow values: networks, or single addresses.
func ParseAllow(vals []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range vals {
		if p, err := netip.ParsePrefix(v); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(v)
		if err != nil {
			want := fmt.Sprintf("%q is not a network (192.168.1.0/24) or an address", v)
			return nil, BadValue("allow", want, "--allow "+want)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

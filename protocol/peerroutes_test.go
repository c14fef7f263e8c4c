package protocol

import "testing"

func TestPeerRoutesRerouteOnlyListedPeers(t *testing.T) {
	routes, err := ParsePeerRoutes(" 127.0.0.1:9092=127.0.0.1:20001, 127.0.0.1:9093=127.0.0.1:20002,")
	if err != nil {
		t.Fatal(err)
	}
	for peer, want := range map[string]string{
		"127.0.0.1:9092": "127.0.0.1:20001",
		"127.0.0.1:9093": "127.0.0.1:20002",
		"127.0.0.1:9094": "127.0.0.1:9094",
	} {
		if got := routes.DialAddr(peer); got != want {
			t.Errorf("DialAddr(%s) = %s, want %s", peer, got, want)
		}
	}
	if got := PeerRoutes(nil).DialAddr("127.0.0.1:9092"); got != "127.0.0.1:9092" {
		t.Errorf("nil routes dial %s, want the peer itself", got)
	}
	for _, bad := range []string{"127.0.0.1:9092", "=127.0.0.1:1", "127.0.0.1:1="} {
		if _, err := ParsePeerRoutes(bad); err == nil {
			t.Errorf("ParsePeerRoutes(%q) accepted", bad)
		}
	}
}

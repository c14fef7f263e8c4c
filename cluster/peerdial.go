package cluster

import (
	"errors"
	"net"
	"time"

	"github.com/hashicorp/raft"

	"github.com/gokafka/gokafka/protocol"
)

// quorumStream is the metadata quorum's TCP stream layer: raft's own
// TCPStreamLayer, except that it dials a voter through
// protocol.PeerDialAddr, so the test-only peer routes (protocol.PeerRoutesEnv)
// cover quorum traffic as they cover every other connection between nodes.
// Without routes it dials the voter's address as given.
type quorumStream struct {
	net.Listener
}

// listenQuorum binds the CONTROLLER listener. Like raft's TCP transport it
// refuses a bind address that peers could not be told to dial (0.0.0.0).
func listenQuorum(bindAddr string) (*quorumStream, error) {
	ln, err := net.Listen("tcp", bindAddr)
	if err != nil {
		return nil, err
	}
	addr, ok := ln.Addr().(*net.TCPAddr)
	if !ok || addr.IP == nil || addr.IP.IsUnspecified() {
		ln.Close()
		return nil, errors.New("local bind address is not advertisable")
	}
	return &quorumStream{Listener: ln}, nil
}

func (s *quorumStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", protocol.PeerDialAddr(string(address)), timeout)
}

package protocol

import (
	"encoding/binary"
	"errors"
)

// Errors of frame and header decoding. They close the connection.
var (
	errShortHeader = errors.New("request header truncated")
	errBadClientID = errors.New("request header client id length invalid")
	errBadTags     = errors.New("request header tagged fields invalid")
)

// header is the fixed part of a request header: api key, api version,
// correlation id and client id (v1+ headers; only ControlledShutdown v0 used a
// header without a client id, and gokafka does not serve it).
type header struct {
	key           int16
	version       int16
	correlationID int32
	clientID      string
}

// parseHeaderPrefix reads key, version and correlation id, the part every
// request shares whatever its version. It is enough to answer or reject a
// request whose version is unknown.
func parseHeaderPrefix(b []byte) (header, error) {
	if len(b) < 8 {
		return header{}, errShortHeader
	}
	return header{
		key:           int16(binary.BigEndian.Uint16(b[0:])),
		version:       int16(binary.BigEndian.Uint16(b[2:])),
		correlationID: int32(binary.BigEndian.Uint32(b[4:])),
	}, nil
}

// parseHeaderRest reads the client id and, for flexible versions, the
// header's tagged fields, returning the body that follows. The client id is a
// classic nullable string even in flexible headers (clients send it that way
// so that brokers which don't know the version can still read it).
func parseHeaderRest(h *header, b []byte, flexible bool) ([]byte, error) {
	b = b[8:]
	if len(b) < 2 {
		return nil, errShortHeader
	}
	n := int16(binary.BigEndian.Uint16(b))
	b = b[2:]
	switch {
	case n == -1:
	case n < -1 || int(n) > len(b):
		return nil, errBadClientID
	default:
		h.clientID = string(b[:n])
		b = b[n:]
	}
	if !flexible {
		return b, nil
	}
	return skipTags(b)
}

// skipTags skips a tagged-field section: a count, then per field a tag, a
// size and that many bytes.
func skipTags(b []byte) ([]byte, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 || count > uint64(len(b)) {
		return nil, errBadTags
	}
	b = b[n:]
	for i := uint64(0); i < count; i++ {
		if _, n = binary.Uvarint(b); n <= 0 {
			return nil, errBadTags
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || size > uint64(len(b)-n) {
			return nil, errBadTags
		}
		b = b[n+int(size):]
	}
	return b, nil
}

// appendResponseHeader appends the response header: the correlation id, and
// for flexible responses an empty tagged-field section. ApiVersions always
// answers with a v0 header so that a client can read it before it knows
// which versions the broker speaks (KIP-511).
func appendResponseHeader(dst []byte, key int16, correlationID int32, flexible bool) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if flexible && key != apiVersionsKey {
		dst = append(dst, 0)
	}
	return dst
}

const (
	produceKey     = 0
	apiVersionsKey = 18
)

package protocol

import (
	"bytes"
	"io"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A spliced Fetch response must reach the client byte for byte as the same
// response encoded with the records inline, at flexible and non-flexible
// versions, over a real socket (sendfile) and over a pipe (copy).
func TestSplicedFetchResponseMatchesInline(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	// Records of several sizes, including ones whose compact length
	// prefix needs 1, 2 and 3 bytes, and an empty one.
	sizes := []int{0, 100, 5000, 70_000, 300_000}
	file := filepath.Join(t.TempDir(), "segment")
	var data []byte
	var offs []int64
	for _, n := range sizes {
		offs = append(offs, int64(len(data)))
		b := make([]byte, n)
		rng.Read(b)
		data = append(data, b...)
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	build := func(version int16, splice bool) kmsg.Response {
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(version)
		var sr *SplicedResponse
		if splice {
			sr = &SplicedResponse{Response: resp}
		}
		for ti := 0; ti < 2; ti++ {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic = "topic"
			for i, n := range sizes {
				rp := kmsg.NewFetchResponseTopicPartition()
				rp.Partition = int32(i)
				rp.HighWatermark = int64(n)
				recs := data[offs[i] : offs[i]+int64(n)]
				if splice && n > 0 {
					f, err := os.Open(file)
					if err != nil {
						t.Fatal(err)
					}
					rp.RecordBatches = sr.Placeholder(FileRegion{File: f, Off: offs[i], Len: int64(n)})
				} else {
					rp.RecordBatches = append([]byte{}, recs...)
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		if splice {
			return sr
		}
		return resp
	}
	conns := map[string]func(t *testing.T) (net.Conn, net.Conn){
		"tcp": func(t *testing.T) (net.Conn, net.Conn) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			c1, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			c2, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			return c2, c1
		},
		"pipe": func(*testing.T) (net.Conn, net.Conn) { return net.Pipe() },
		"tls": func(t *testing.T) (net.Conn, net.Conn) {
			server, client := tlsPair(t)
			return server, client
		},
	}
	for name, mk := range conns {
		for _, v := range []int16{4, 11, 12, 16} {
			h := header{key: 1, version: v, correlationID: 7}
			want := encodeResponse(h, build(v, false))
			sr := build(v, true).(*SplicedResponse)
			f, err := splice(encodeResponse(h, sr), sr.IsFlexible(), sr)
			if err != nil {
				t.Fatal(err)
			}
			server, client := mk(t)
			errc := make(chan error, 1)
			go func() { errc <- f.write(server) }()
			got := make([]byte, len(want))
			if _, err := io.ReadFull(client, got); err != nil {
				t.Fatalf("%s v%d: %v", name, v, err)
			}
			if err := <-errc; err != nil {
				t.Fatalf("%s v%d: write: %v", name, v, err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s v%d: spliced response differs from the inline encoding", name, v)
			}
			var back kmsg.FetchResponse
			back.SetVersion(v)
			if err := back.ReadFrom(got[4+4+map[bool]int{true: 1}[v >= 12]:]); err != nil {
				t.Fatalf("%s v%d: decode: %v", name, v, err)
			}
			server.Close()
			client.Close()
		}
	}
}

// countingWriter counts the Write calls it gets.
type countingWriter struct {
	writes int
	bytes.Buffer
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

// Over TLS a spliced response goes out in chunks of chunkSize: the
// headers and length prefixes between records do not each become a Write
// (a TLS record of a few bytes), and the file bytes come in with them.
func TestChunkedWriteGathersPiecesIntoLargeWrites(t *testing.T) {
	file := filepath.Join(t.TempDir(), "segment")
	data := make([]byte, 600_000)
	rand.New(rand.NewSource(2)).Read(data)
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	sr := &SplicedResponse{Response: resp}
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic = "t"
	// 200 partitions of 3000 bytes each: 600 pieces of bytes between
	// the regions.
	for i := 0; i < 200; i++ {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition = int32(i)
		rp.RecordBatches = sr.Placeholder(FileRegion{File: f, Off: int64(i) * 3000, Len: 3000})
		rt.Partitions = append(rt.Partitions, rp)
	}
	resp.Topics = append(resp.Topics, rt)
	h := header{key: 1, version: 12, correlationID: 1}
	f, err := splice(encodeResponse(h, sr), true, sr)
	if err != nil {
		t.Fatal(err)
	}
	var w countingWriter
	defer f.close()
	if err := f.writeChunked(&w); err != nil {
		t.Fatal(err)
	}
	want := (w.Len() + chunkSize - 1) / chunkSize
	if w.writes != want {
		t.Fatalf("%d bytes went out in %d writes, want %d of up to %d bytes", w.Len(), w.writes, want, chunkSize)
	}
	var back kmsg.FetchResponse
	back.SetVersion(12)
	if err := back.ReadFrom(w.Bytes()[4+4+1:]); err != nil {
		t.Fatal(err)
	}
	for i, p := range back.Topics[0].Partitions {
		if !bytes.Equal(p.RecordBatches, data[i*3000:(i+1)*3000]) {
			t.Fatalf("partition %d: records differ", i)
		}
	}
}

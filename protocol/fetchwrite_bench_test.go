package protocol

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkFetchWrite measures writing one Fetch response of 1 MiB of
// record batches (4 partitions of 256 KiB, from a segment file in the page
// cache) to a client that drains it over loopback, by each path a
// response can take:
//
//   - tcp-sendfile: a plain listener, file regions by sendfile;
//   - tls-chunked: a TLS listener, file regions read into 256 KiB chunks
//     with the bytes around them (writeChunked);
//   - tls-inline: a TLS listener without file regions, the records read
//     into memory, encoded into the response and written, what a fetch
//     over TLS costs without regions;
//   - tls-piecewise: file regions over TLS written piece by piece with
//     32 KiB io.Copy reads, the path regions took over TLS before
//     writeChunked.
func BenchmarkFetchWrite(b *testing.B) {
	const parts, partLen = 4, 256 << 10
	file := filepath.Join(b.TempDir(), "segment")
	data := make([]byte, parts*partLen)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		b.Fatal(err)
	}
	h := header{key: 1, version: 12, correlationID: 1}
	spliced := func(b *testing.B) frame {
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(12)
		sr := &SplicedResponse{Response: resp}
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = "bench"
		for i := range parts {
			f, err := os.Open(file)
			if err != nil {
				b.Fatal(err)
			}
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = int32(i)
			rp.RecordBatches = sr.Placeholder(FileRegion{File: f, Off: int64(i * partLen), Len: partLen})
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
		fr, err := splice(encodeResponse(h, sr), true, sr)
		if err != nil {
			b.Fatal(err)
		}
		return fr
	}
	inline := func(b *testing.B) frame {
		f, err := os.Open(file)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(12)
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = "bench"
		for i := range parts {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = int32(i)
			rp.RecordBatches = make([]byte, partLen)
			if _, err := f.ReadAt(rp.RecordBatches, int64(i*partLen)); err != nil {
				b.Fatal(err)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
		return frame{b: encodeResponse(h, resp)}
	}
	piecewise := func(fr frame, w io.Writer) error {
		defer fr.close()
		for _, p := range fr.pieces {
			if p.region == nil {
				if _, err := w.Write(p.b); err != nil {
					return err
				}
				continue
			}
			if _, err := io.Copy(w, io.NewSectionReader(p.region.File, p.region.Off, p.region.Len)); err != nil {
				return err
			}
		}
		return nil
	}
	tcpPair := func(b *testing.B) (net.Conn, net.Conn) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer ln.Close()
		c1, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		c2, err := ln.Accept()
		if err != nil {
			b.Fatal(err)
		}
		return c2, c1
	}
	cases := []struct {
		name  string
		pair  func(*testing.B) (net.Conn, net.Conn)
		write func(*testing.B, net.Conn) error
	}{
		{"tcp-sendfile", tcpPair, func(b *testing.B, c net.Conn) error { return spliced(b).write(c) }},
		{"tls-chunked", func(b *testing.B) (net.Conn, net.Conn) { return tlsPair(b) }, func(b *testing.B, c net.Conn) error { return spliced(b).write(c) }},
		{"tls-inline", func(b *testing.B) (net.Conn, net.Conn) { return tlsPair(b) }, func(b *testing.B, c net.Conn) error { return inline(b).write(c) }},
		{"tls-piecewise", func(b *testing.B) (net.Conn, net.Conn) { return tlsPair(b) }, func(b *testing.B, c net.Conn) error { return piecewise(spliced(b), c) }},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			server, client := tc.pair(b)
			defer server.Close()
			drained := make(chan struct{})
			go func() { io.Copy(io.Discard, client); close(drained) }()
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if err := tc.write(b, server); err != nil {
					b.Fatal(err)
				}
			}
			server.Close()
			<-drained
			client.Close()
		})
	}
}

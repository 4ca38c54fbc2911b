package data

import (
	"bufio"
	"compress/gzip"
	"errors"
	"io"
	"strings"
)

// Text is read through buffers this large so that lines are found with few
// system calls and a single bytes.IndexByte per line.
const bufSize = 1 << 18

// lineReader hands out the lines of a text one at a time, counting them.
type lineReader struct {
	name string
	br   *bufio.Reader
	ra   *readahead // decompressor of gzip input, nil for plain text
	line int        // number of the line last returned
	long []byte     // assembles lines longer than the buffer
}

// openText returns a lineReader over the text in r, decompressing it if it
// starts with the gzip magic bytes 1f 8b. The caller must close it.
func openText(r io.Reader, name string) (*lineReader, error) {
	br := bufio.NewReaderSize(r, bufSize)
	magic, err := br.Peek(2)
	if err != nil && err != io.EOF {
		return nil, &ParseError{File: name, Msg: "read: " + err.Error(), Err: err}
	}
	lr := &lineReader{name: name, br: br}
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, &ParseError{File: name, Msg: gzipMessage(err), Err: err}
		}
		lr.ra = newReadahead(zr)
		lr.br = bufio.NewReaderSize(lr.ra, bufSize)
	}
	return lr, nil
}

// close stops the decompressing goroutine, if any.
func (lr *lineReader) close() {
	if lr.ra != nil {
		lr.ra.close()
	}
}

// next returns the next line without its "\n" or "\r\n", or io.EOF after
// the last one. The slice is valid until the next call.
func (lr *lineReader) next() ([]byte, error) {
	b, err := lr.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		lr.long = append(lr.long[:0], b...)
		for err == bufio.ErrBufferFull {
			b, err = lr.br.ReadSlice('\n')
			lr.long = append(lr.long, b...)
		}
		b = lr.long
	}
	switch {
	case err == io.EOF && len(b) == 0:
		return nil, io.EOF
	case err == io.EOF: // last line lacks its "\n"
	case err != nil:
		// The partial line is dropped: the caller stops at this error.
		msg := "read: " + err.Error()
		if lr.ra != nil {
			msg = gzipMessage(err)
		}
		return nil, &ParseError{File: lr.name, Line: lr.line + 1, Col: 1, Msg: msg, Err: err}
	}
	lr.line++
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b, nil
}

// gzipMessage describes an error from the gzip decompressor.
func gzipMessage(err error) string {
	msg := err.Error()
	if !strings.HasPrefix(msg, "gzip: ") {
		msg = "gzip: " + msg
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		msg += " (truncated file?)"
	}
	return msg
}

// readahead reads r in its own goroutine, a few blocks ahead of its
// consumer. Over a gzip stream it lets decompression and parsing run on two
// cores, which roughly doubles the throughput on compressed input.
type readahead struct {
	blocks chan readBlock // filled blocks, in order
	free   chan []byte    // blocks the consumer is done with
	done   chan struct{}  // closed to stop the goroutine
	cur    []byte         // unread part of the block being consumed
	held   []byte         // the block being consumed, to recycle
	err    error          // error that ended the block being consumed
}

type readBlock struct {
	b   []byte
	err error
}

const readaheadBlocks = 4

func newReadahead(r io.Reader) *readahead {
	ra := &readahead{
		blocks: make(chan readBlock, readaheadBlocks),
		free:   make(chan []byte, readaheadBlocks),
		done:   make(chan struct{}),
	}
	for range readaheadBlocks {
		ra.free <- make([]byte, bufSize)
	}
	go ra.fill(r)
	return ra
}

// fill runs in its own goroutine: it reads r into free blocks until an error
// (io.EOF included), which travels with the last block.
func (ra *readahead) fill(r io.Reader) {
	for {
		var buf []byte
		select {
		case buf = <-ra.free:
		case <-ra.done:
			return
		}
		n := 0
		var err error
		for n < len(buf) && err == nil {
			var k int
			k, err = r.Read(buf[n:])
			n += k
		}
		select {
		case ra.blocks <- readBlock{buf[:n], err}:
		case <-ra.done:
			return
		}
		if err != nil {
			return
		}
	}
}

// Read implements io.Reader for the consumer.
func (ra *readahead) Read(p []byte) (int, error) {
	for len(ra.cur) == 0 {
		if ra.err != nil {
			return 0, ra.err
		}
		if ra.held != nil {
			ra.free <- ra.held[:cap(ra.held)]
		}
		blk := <-ra.blocks
		ra.cur, ra.held, ra.err = blk.b, blk.b, blk.err
	}
	n := copy(p, ra.cur)
	ra.cur = ra.cur[n:]
	return n, nil
}

func (ra *readahead) close() { close(ra.done) }

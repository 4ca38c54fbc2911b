package data

import (
	"fmt"
	"strconv"
)

// ParseError reports bad input: the file, the 1-based line and byte column
// where the problem was found, and what was expected there. Readers return it
// for every malformed input so that users can jump straight to the spot in an
// editor; Err holds an underlying cause such as a gzip error, if any.
type ParseError struct {
	File string
	Line int // 1-based line number; 0 if the error concerns the whole file
	Col  int // 1-based byte column within the line; 0 if not known
	Msg  string
	Err  error
}

// Error formats the error like a compiler message, "file:line:col: msg".
func (e *ParseError) Error() string {
	s := e.File
	if e.Line > 0 {
		s += ":" + strconv.Itoa(e.Line)
		if e.Col > 0 {
			s += ":" + strconv.Itoa(e.Col)
		}
	}
	return s + ": " + e.Msg
}

// Unwrap returns the underlying cause, so that errors.Is sees, for example,
// io.ErrUnexpectedEOF from a truncated gzip file.
func (e *ParseError) Unwrap() error { return e.Err }

// quote returns b as a quoted Go string for an error message, shortened
// when long so that a garbage line does not flood the terminal.
func quote(b []byte) string {
	const max = 40
	if len(b) > max {
		return strconv.Quote(string(b[:max])) + "..."
	}
	return strconv.Quote(string(b))
}

// errorf builds a ParseError; it exists to keep call sites on one line.
func errorf(file string, line, col int, format string, args ...any) *ParseError {
	return &ParseError{File: file, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

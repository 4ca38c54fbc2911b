package data

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
)

// WriteXMC writes d in the Extreme Classification Repository text format
// that Read parses back exactly: a header "N D L", then per row the
// comma-separated label ids and the "f:v" features, values in the shortest
// form that reads back to the same float32 ("1" for 1). A row without labels
// starts with a space, as in the repository's files.
func WriteXMC(w io.Writer, d *Dataset) error {
	return write(w, d, true, 0)
}

// WriteLIBSVM writes d in the LIBSVM multi-label format: no header, 1-based
// feature ids, 0-based labels. Read with FormatLIBSVM parses it back exactly
// when given d's D and L (inference would drop trailing empty columns).
func WriteLIBSVM(w io.Writer, d *Dataset) error {
	return write(w, d, false, 1)
}

func write(w io.Writer, d *Dataset, header bool, base int64) error {
	if d.X.Rows != d.Y.Rows {
		return fmt.Errorf("write dataset: X has %d rows, Y has %d", d.X.Rows, d.Y.Rows)
	}
	bw := bufio.NewWriterSize(w, bufSize)
	var buf []byte
	if header {
		buf = fmt.Appendf(buf, "%d %d %d\n", d.N(), d.D(), d.L())
	}
	for i := range d.N() {
		labels, _ := d.Y.Row(i)
		idx, val := d.X.Row(i)
		buf = appendRow(buf, labels, idx, val, base)
		if len(buf) > 64<<10 {
			if _, err := bw.Write(buf); err != nil {
				return fmt.Errorf("write dataset row %d: %w", i, err)
			}
			buf = buf[:0]
		}
	}
	if _, err := bw.Write(buf); err != nil {
		return fmt.Errorf("write dataset: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write dataset: %w", err)
	}
	return nil
}

// appendRow appends one text row "l1,l2 f:v f:v\n" to buf, adding base to
// the feature ids. A row without labels but with features starts with a
// space; a row with neither is an empty line.
func appendRow(buf []byte, labels, idx []int32, val []float32, base int64) []byte {
	for k, l := range labels {
		if k > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendInt(buf, int64(l), 10)
	}
	for k, j := range idx {
		buf = append(buf, ' ')
		buf = strconv.AppendInt(buf, int64(j)+base, 10)
		buf = append(buf, ':')
		if v := val[k]; v == 1 {
			buf = append(buf, '1') // binary features: skip the float formatter
		} else {
			buf = strconv.AppendFloat(buf, float64(v), 'g', -1, 32)
		}
	}
	return append(buf, '\n')
}

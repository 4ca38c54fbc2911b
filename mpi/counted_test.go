package mpi

import (
	"strings"
	"testing"
)

func TestWriteReport(t *testing.T) {
	all := []Stats{
		{Rank: 0, Ops: []OpStats{
			{Op: "barrier", Calls: 2, Messages: 4},
			{Op: "bcast", Calls: 1, Messages: 2, BytesSent: 2 << 20, BlockedSeconds: 0.5},
			{Op: "send"}, // never called: no row
		}},
		{Rank: 1, Ops: []OpStats{
			{Op: "barrier", Calls: 2, Messages: 4, BlockedSeconds: 0.125},
			{Op: "bcast", Calls: 1, Messages: 1, BytesRecv: 1 << 20, BlockedSeconds: 0.25},
			{Op: "recv", BlockedSeconds: 1}, // failed calls only: blocked time still shows
		}},
	}
	var b strings.Builder
	if err := WriteReport(&b, all); err != nil {
		t.Fatal(err)
	}
	want := `  rank       op  calls  msgs     sent  received  blocked s
     0  barrier      2     4      0 B       0 B      0.000
     0    bcast      1     2  2.0 MiB       0 B      0.500
     1  barrier      2     4      0 B       0 B      0.125
     1    bcast      1     1      0 B   1.0 MiB      0.250
     1     recv      0     0      0 B       0 B      1.000
   all  barrier      4     8      0 B       0 B      0.125
   all    bcast      2     3  2.0 MiB   1.0 MiB      0.750
   all     recv      0     0      0 B       0 B      1.000
   all    total      6    11  2.0 MiB   1.0 MiB      1.875
`
	if got := b.String(); got != want {
		t.Errorf("report:\n%s\nwant:\n%s", got, want)
	}
}

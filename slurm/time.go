package slurm

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseTime parses a time limit in one of the formats sbatch --time
// accepts: "minutes", "minutes:seconds", "hours:minutes:seconds",
// "days-hours", "days-hours:minutes" and "days-hours:minutes:seconds".
// The leading field may be as large as needed ("90" is 90 minutes); the
// fields after it must stay below 24 hours, 60 minutes or 60 seconds. A
// limit of zero is an error: Slurm would read it as "no limit".
func ParseTime(s string) (time.Duration, error) {
	bad := func(why string) (time.Duration, error) {
		return 0, fmt.Errorf("time limit %q: %s; want minutes, minutes:seconds, hours:minutes:seconds, days-hours, days-hours:minutes or days-hours:minutes:seconds", s, why)
	}
	days, rest, hasDays := strings.Cut(s, "-")
	if !hasDays {
		rest = s
	}
	fields := strings.Split(rest, ":")
	if len(fields) > 3 || hasDays && days == "" {
		return bad("too many fields")
	}
	var nums []int64
	if hasDays {
		fields = append([]string{days}, fields...)
	}
	for _, f := range fields {
		if f == "" || strings.TrimLeft(f, "0123456789") != "" {
			return bad(fmt.Sprintf("field %q is not a number", f))
		}
		n, err := strconv.ParseInt(f, 10, 32)
		if err != nil {
			return bad(fmt.Sprintf("field %q is too large", f))
		}
		nums = append(nums, n)
	}

	// The units of the fields, from the first, and the bound of each after it.
	var units []time.Duration
	switch {
	case hasDays:
		units = []time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second}[:len(nums)]
	case len(nums) == 3:
		units = []time.Duration{time.Hour, time.Minute, time.Second}
	default:
		units = []time.Duration{time.Minute, time.Second}[:len(nums)]
	}
	var d time.Duration
	for i, n := range nums {
		if i > 0 && time.Duration(n)*units[i] >= units[i-1] {
			return bad(fmt.Sprintf("field %q is out of range", fields[i]))
		}
		d += time.Duration(n) * units[i]
	}
	if d == 0 {
		return bad("the limit is zero")
	}
	return d, nil
}

package slurm

import "strings"

// Quote returns s as one word for a POSIX shell: unchanged when every byte
// is one no shell treats specially, otherwise in single quotes, inside
// which the shell expands nothing, each single quote of s becoming a
// closing quote, an escaped quote and an opening quote. The standard
// library has no shell quoting, and this is all a script needs.
func Quote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool { return !isShellSafe(r) }) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// isShellSafe reports whether r stands for itself anywhere in a shell word.
func isShellSafe(r rune) bool {
	switch {
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		return true
	}
	return strings.ContainsRune("_-+./:,@%", r)
}

package data

// SplitMix64 is the SplitMix64 finaliser, a fast, well-mixing 64-bit hash.
// Every random stream of xmc is seeded through it from --seed and the id of
// what it draws for (a generated row, a tree, a label), so that what is
// drawn depends on the seed and the id alone, never on which rank or
// worker draws it.
func SplitMix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

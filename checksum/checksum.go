// Package checksum is the one checksum of xmc's files and fingerprints:
// CRC-32C (Castagnoli), which current x86 and Arm processors compute in
// hardware. Model files, checkpoint records and the fingerprints that tie
// a checkpoint to its data and parameters all use it.
package checksum

import (
	"hash"
	"hash/crc32"
)

// table returns the CRC-32C table; hash/crc32 builds it once and caches it.
func table() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) }

// Sum returns the CRC-32C of b.
func Sum(b []byte) uint32 { return crc32.Checksum(b, table()) }

// New returns a CRC-32C hash, for data written piece by piece.
func New() hash.Hash32 { return crc32.New(table()) }

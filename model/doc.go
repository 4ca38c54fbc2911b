// Package model is what every kind of xmc model shares: the versioned
// container file each model is stored in, sharded models described by a
// manifest, the Kind and Model interfaces through which a trainer's units
// are stored and a model scores rows, and the prediction rows (Scored,
// Sparse) that ranks exchange and merge. The kinds themselves live in the
// packages below: model/forest (CRAFTML forests), model/linear (one weight
// vector per label), and model/kinds, which finds a file's kind.
//
// # Container format
//
// A model file is a sequence of named, checksummed sections, so that a
// reader can find what it needs and tell exactly which part of a damaged
// file is bad. All integers are little-endian.
//
//	magic    "XMCMODEL" (8 bytes)
//	version  uint32, currently 1
//	section  repeated, the first named "header":
//	    name length  uint16, 1..255
//	    name         printable ASCII, no spaces
//	    length       uint64, payload bytes
//	    crc          uint32, CRC-32C (Castagnoli) of the payload
//	    payload
//	end      uint16 0 (a zero name length marks the end)
//	count    uint32, number of sections including the header
//	crc      uint32, CRC-32C of every byte of the file before this field
//
// The header payload is the JSON encoding of [Header]. The final checksum
// covers the section names and lengths, which the per-section checksums do
// not, so every single-byte corruption is detected. The file holds no
// timestamps or host names: two runs with the same seed write identical
// bytes.
package model

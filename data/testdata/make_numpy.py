#!/usr/bin/env python3
"""Writes the NumPy files of data/testdata as NumPy and SciPy write them.

    X.small.npz    scipy.sparse.save_npz(csr_matrix(X, dtype=float64))
    Y.small.npz    scipy.sparse.save_npz(csr_matrix(Y, dtype=float64))
    dense.npy      numpy.save(numpy.asfortranarray(X, dtype=float32))

With NumPy and SciPy installed, the files come from them. Without them
(as where these were made), the script writes the same bytes with the
standard library alone: NumPy's .npy format 1.0 (a header dict padded
with spaces to a multiple of 64 bytes, then the raw little-endian
elements) inside a deflated zip, as numpy.savez_compressed does. The
indices of X's row 1 are left unsorted, as SciPy allows.
"""
import struct
import zipfile

X = [  # rows of (column, value); row 1 unsorted, row 2 empty
    [(0, 0.5), (3, 1.25)],
    [(4, 2.0), (1, -1.5)],
    [],
    [(2, 3.0)],
]
Y = [[1], [0, 2], [2], []]
SHAPE_X, SHAPE_Y = (4, 5), (4, 3)


def npy(descr, shape, payload, fortran=False):
    shape_repr = "(%s)" % "".join("%d," % s for s in shape) if len(shape) == 1 else repr(tuple(shape))
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape_repr)
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * pad + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1") + payload


def csr(rows):
    indptr, indices, data = [0], [], []
    for row in rows:
        for col, val in row:
            indices.append(col)
            data.append(val)
        indptr.append(len(indices))
    return indptr, indices, data


def save_npz(path, rows, shape):
    indptr, indices, data = csr(rows)
    arrays = [
        ("indices.npy", npy("<i4", (len(indices),), struct.pack("<%di" % len(indices), *indices))),
        ("indptr.npy", npy("<i4", (len(indptr),), struct.pack("<%di" % len(indptr), *indptr))),
        ("format.npy", npy("<U3", (), "csr".encode("utf-32-le"))),
        ("shape.npy", npy("<i8", (2,), struct.pack("<2q", *shape))),
        ("data.npy", npy("<f8", (len(data),), struct.pack("<%dd" % len(data), *data))),
    ]
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, blob in arrays:
            z.writestr(name, blob)


def save_dense_fortran(path, rows, shape):
    dense = [[0.0] * shape[1] for _ in range(shape[0])]
    for i, row in enumerate(rows):
        for col, val in row:
            dense[i][col] = val
    column_major = [dense[i][j] for j in range(shape[1]) for i in range(shape[0])]
    with open(path, "wb") as f:
        f.write(npy("<f4", shape, struct.pack("<%df" % len(column_major), *column_major), fortran=True))


def main():
    y_rows = [[(l, 1.0) for l in labels] for labels in Y]
    try:
        import numpy as np
        import scipy.sparse as sp
    except ImportError:
        save_npz("X.small.npz", X, SHAPE_X)
        save_npz("Y.small.npz", y_rows, SHAPE_Y)
        save_dense_fortran("dense.npy", X, SHAPE_X)
        return
    for path, rows, shape in (("X.small.npz", X, SHAPE_X), ("Y.small.npz", y_rows, SHAPE_Y)):
        indptr, indices, data = csr(rows)
        m = sp.csr_matrix((np.array(data), np.array(indices, dtype=np.int32), np.array(indptr, dtype=np.int32)), shape=shape)
        sp.save_npz(path, m)
    indptr, indices, data = csr(X)
    dense = sp.csr_matrix((data, indices, indptr), shape=SHAPE_X).toarray().astype(np.float32)
    np.save("dense.npy", np.asfortranarray(dense))


if __name__ == "__main__":
    main()

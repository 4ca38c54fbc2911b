# dups.py SET...: run in a folder holding SET.train.txt, SET.test.txt and held.SET.s1.txt (see refit.sh): the share of
# held-out rows whose feature row has an identical copy among the other training rows, and of test rows with one in
# the training rows.
import sys, collections
def feats(path):
    out=[]
    with open(path) as f:
        f.readline()
        for line in f:
            parts=line.split()
            if parts and ':' not in parts[0]:
                parts=parts[1:]
            out.append(' '.join(sorted(parts)))
    return out
for d in sys.argv[1:]:
    tr=collections.Counter(feats(f'{d}.train.txt'))
    held=feats(f'held.{d}.s1.txt'); hc=collections.Counter(held)
    rest=tr-hc
    te=feats(f'{d}.test.txt')
    dh=sum(1 for h in held if rest[h]>0)/len(held)
    dt=sum(1 for h in te if tr[h]>0)/len(te)
    print(f'{d}: held-out rows with an identical feature row in the rest of train {100*dh:.1f}%, test rows with one in train {100*dt:.1f}%')

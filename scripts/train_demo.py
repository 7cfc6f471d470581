#!/usr/bin/python3
"""Train the Fashion-MNIST demo classifier and write internal/demo/data/.

A small CNN is trained on CPU with PyTorch on the Fashion-MNIST training set,
evaluated on the test set, and exported to ONNX (opset 13) with a fixed batch
of 8: input `image` float32 [8,1,28,28] with pixel values in [0,1], output
`logits` float32 [8,10]. Everything is seeded, so a rerun reproduces the
same files.

Generated files in internal/demo/data/:
    model.onnx   the trained classifier
    images.npy   the first 8 test-set images, float32 [8,1,28,28] in [0,1]
    labels.npy   their true labels, int64 [8]
    logits.npy   PyTorch's logits for those images, float32 [8,10]
    README.md    a short description, including the test accuracy reached

Run from the repository root (takes a few minutes on two CPU cores):
    /usr/bin/python3 scripts/train_demo.py

Requires the Debian packages python3-torch, python3-torchvision,
python3-onnx, python3-numpy and dataset-fashion-mnist (the idx files are
read from /usr/share/datasets/fashion-mnist).
"""

import gzip
import os
import sys
import time

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_fixtures import CORE_OPS as SUPPORTED_OPS  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_DIR = os.path.join(REPO_ROOT, "internal", "demo", "data")
DATA_DIR = "/usr/share/datasets/fashion-mnist"

SEED = 20240601
EPOCHS = 6
BATCH = 128
LR = 1e-3
DEMO_BATCH = 8
OPSET = 13

CLASS_NAMES = [
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
]


def read_idx(path):
    """Read a gzip-compressed idx file into a numpy array."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic = int.from_bytes(data[0:4], "big")
    if data[0] != 0 or data[1] != 0 or data[2] != 0x08:
        raise ValueError(f"{path}: unsupported idx magic {magic:#x}")
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    offset = 4 + 4 * ndim
    return np.frombuffer(data, dtype=np.uint8, offset=offset).reshape(dims)


def load_split(kind):
    images = read_idx(os.path.join(DATA_DIR, f"{kind}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(DATA_DIR, f"{kind}-labels-idx1-ubyte.gz"))
    x = (images.astype(np.float32) / 255.0).reshape(-1, 1, 28, 28)
    y = labels.astype(np.int64)
    return x, y


class FashionCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * 7 * 7, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)  # [N,16,14,14]
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)  # [N,32,7,7]
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return self.fc2(x)


def evaluate(model, x, y):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(x), 1000):
            logits = model(torch.from_numpy(x[i:i + 1000]))
            correct += int((logits.argmax(1).numpy() == y[i:i + 1000]).sum())
    return correct / len(x)


def main():
    torch.manual_seed(SEED)
    np.random.seed(SEED)
    torch.set_num_threads(2)
    torch.use_deterministic_algorithms(True)

    train_x, train_y = load_split("train")
    test_x, test_y = load_split("t10k")
    print(f"train {train_x.shape}, test {test_x.shape}")

    model = FashionCNN()
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    gen = torch.Generator().manual_seed(SEED)
    tx = torch.from_numpy(train_x)
    ty = torch.from_numpy(train_y)

    start = time.time()
    for epoch in range(EPOCHS):
        model.train()
        perm = torch.randperm(len(tx), generator=gen)
        total = 0.0
        for i in range(0, len(tx), BATCH):
            idx = perm[i:i + BATCH]
            loss = F.cross_entropy(model(tx[idx]), ty[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss) * len(idx)
        acc = evaluate(model, test_x, test_y)
        print(f"epoch {epoch + 1}: train loss {total / len(tx):.4f}, "
              f"test accuracy {acc * 100:.2f}% ({time.time() - start:.0f}s)")

    model.eval()
    accuracy = evaluate(model, test_x, test_y)
    print(f"final test accuracy: {accuracy * 100:.2f}%")

    os.makedirs(OUT_DIR, exist_ok=True)
    images = np.ascontiguousarray(test_x[:DEMO_BATCH])
    labels = np.ascontiguousarray(test_y[:DEMO_BATCH])
    with torch.no_grad():
        logits = model(torch.from_numpy(images)).numpy().astype(np.float32)

    path = os.path.join(OUT_DIR, "model.onnx")
    torch.onnx.export(
        model, (torch.from_numpy(images),), path,
        input_names=["image"], output_names=["logits"],
        opset_version=OPSET, do_constant_folding=True,
        training=torch.onnx.TrainingMode.EVAL, export_params=True,
    )
    proto = onnx.load(path)
    onnx.checker.check_model(proto, full_check=True)
    op_types = sorted({n.op_type for n in proto.graph.node})
    print(f"model.onnx ops: {', '.join(op_types)}")
    bad = [t for t in op_types if t not in SUPPORTED_OPS]
    bad += [n.domain for n in proto.graph.node if n.domain not in ("", "ai.onnx")]
    if bad:
        raise SystemExit(f"unsupported op types in exported graph: {', '.join(sorted(set(bad)))}")

    np.save(os.path.join(OUT_DIR, "images.npy"), images)
    np.save(os.path.join(OUT_DIR, "labels.npy"), labels)
    np.save(os.path.join(OUT_DIR, "logits.npy"), np.ascontiguousarray(logits))

    preds = logits.argmax(1)
    for i in range(DEMO_BATCH):
        print(f"  image {i}: label {labels[i]} ({CLASS_NAMES[labels[i]]}), "
              f"predicted {preds[i]} ({CLASS_NAMES[preds[i]]})")

    readme = f"""# Fashion-MNIST demo data

`model.onnx` is a small CNN classifier for Fashion-MNIST (opset {OPSET}; input `image` float32 [{DEMO_BATCH},1,28,28] with pixels in [0,1], output `logits` float32 [{DEMO_BATCH},10]); it reaches {accuracy * 100:.2f}% accuracy on the 10,000-image test set.
`images.npy` holds the first {DEMO_BATCH} test-set images (float32 [{DEMO_BATCH},1,28,28]), `labels.npy` their true labels (int64 [{DEMO_BATCH}]) and `logits.npy` PyTorch's logits for them (float32 [{DEMO_BATCH},10]), a reference for tests.
Class indices: {", ".join(f"{i} {n}" for i, n in enumerate(CLASS_NAMES))}.
All files are regenerated, reproducibly, by `/usr/bin/python3 scripts/train_demo.py` run from the repository root.
"""
    with open(os.path.join(OUT_DIR, "README.md"), "w") as f:
        f.write(readme)
    return 0


if __name__ == "__main__":
    sys.exit(main())

// Package demo holds the small model embedded in the berth binary: a
// convolutional classifier trained on Fashion-MNIST by
// scripts/train_demo.py, with a handful of test images, their true labels
// and PyTorch's logits for them.
package demo

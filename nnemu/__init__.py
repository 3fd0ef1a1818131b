"""nnemu: an emulator of the Android Neural Networks API stack."""

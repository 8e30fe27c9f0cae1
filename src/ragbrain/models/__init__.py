"""What runs a network: the embedding models and their back-ends (torch, ONNX Runtime),
the BERT encoder the critic uses, the e5 conversion."""

"""What dtrain's framework packages share."""

"""serdes: the producer/consumer library (registry client, wire format, serializers)."""

"""Aligning languages the models never heard: the 40 languages of VoxAngeles, hand-segmented Czech,
and TIMIT read as IPA."""

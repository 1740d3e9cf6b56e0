"""Worker releases: reproducible packages that refuse what does not match (DGR-068).

- ``layout``: the package's files and their checksums, the archive format;
- ``sbom``: the SPDX 2.3 document;
- ``build``: ``patchctl release build``;
- ``check``: ``patchctl release verify``;
- ``devices``: the vulkan lane's device facts (what a package was tested on);
- ``documents``: the package's JSON documents and their schemas.

May import: ``model``, ``gitrepo``, ``reproducers`` (the stamped tree, the toolchain),
``records`` (the worker's identity, the machine) and the helpers beside ``patchctl.cli``.
"""

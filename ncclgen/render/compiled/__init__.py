"""Precompiled templates/ (tools/compile_templates.py): used while these hashes and this jinja2 hold."""

JINJA2 = '3.1.6'
SOURCES = {
    'slurm/_env.sh.j2': '18ef79af94516b5add1e3269b6369235675aa26b82c53e6da2358a6c04f36388',
    'slurm/_head.sh.j2': '06bae8201ae2d2ffc4f9f06b7982fe0c417b877dbf059a9d13d8275f994d4105',
    'slurm/_nodes.sh.j2': 'a9d5e62a963bcb63b31469325012f62029307b59cc5c6f7e7df9bf9f77dd1b25',
    'slurm/_tail.sh.j2': '9c4e120d833dd37f4420834b6c99c4a5561b0a80a4afa5d82165a5cc21a8a281',
    'slurm/ray.sh.j2': '3d8c8a0f382c2d8319ce59c604688a579a5b392f779dd4572ec48cabe0985d11',
    'slurm/torchrun.sh.j2': 'a29f028858ab461843aba1a7637effff2734ff1b493676f4b45a42a76e5d78e1',
}

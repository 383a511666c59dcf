"""Precompiled templates/ (tools/compile_templates.py): used while these hashes and this jinja2 hold."""

JINJA2 = '3.1.6'
SOURCES = {
    'slurm/_env.sh.j2': '18ef79af94516b5add1e3269b6369235675aa26b82c53e6da2358a6c04f36388',
    'slurm/_head.sh.j2': '06bae8201ae2d2ffc4f9f06b7982fe0c417b877dbf059a9d13d8275f994d4105',
    'slurm/_nodes.sh.j2': 'a9d5e62a963bcb63b31469325012f62029307b59cc5c6f7e7df9bf9f77dd1b25',
    'slurm/_tail.sh.j2': '8daa3c1ae45101b15de6cdd18573b56432b7ee0465dba44835c0848ea68668dd',
    'slurm/ray.sh.j2': '3394586493eed37816287b8736621d7348156cbf38079f3fc18c3757be0f6ecf',
    'slurm/torchrun.sh.j2': 'b0fcc36266257986bcf172642110b4e6dbd0c7a77424825588ebcb5de9d44e6b',
}

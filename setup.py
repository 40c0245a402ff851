# Reads everything from settings.ini (the nbdev 2 convention); extras are the *_requirements keys.
from configparser import ConfigParser
import setuptools

config = ConfigParser(delimiters=['='])
config.read('settings.ini', encoding='utf-8')
cfg = config['DEFAULT']
licenses = {'apache2': ('Apache Software License 2.0', 'OSI Approved :: Apache Software License')}
statuses = ['1 - Planning', '2 - Pre-Alpha', '3 - Alpha', '4 - Beta', '5 - Production/Stable', '6 - Mature', '7 - Inactive']
py_versions = '3.10 3.11 3.12 3.13'.split()
lic = licenses[cfg['license'].lower()]
min_python = cfg['min_python']
extras = {k[:-len('_requirements')]: cfg[k].split() for k in cfg if k.endswith('_requirements') and k != 'dev_requirements'}
extras['dev'] = cfg.get('dev_requirements', '').split()
setuptools.setup(
    name=cfg['lib_name'], license=lic[0],
    classifiers=['Development Status :: ' + statuses[int(cfg['status'])], 'Intended Audience :: ' + cfg['audience'].title(),
                 'Natural Language :: ' + cfg['language'].title(), 'License :: ' + lic[1]]
                + ['Programming Language :: Python :: ' + o for o in py_versions[py_versions.index(min_python):]],
    url=cfg['git_url'], packages=setuptools.find_packages(include=['swecl', 'swecl.*']), include_package_data=True,
    install_requires=cfg.get('requirements', '').split(), extras_require=extras,
    python_requires='>=' + min_python, long_description=open('README.md', encoding='utf-8').read(),
    long_description_content_type='text/markdown', zip_safe=False,
    entry_points={'console_scripts': cfg.get('console_scripts', '').split(), 'nbdev': [f'{cfg["lib_path"]}={cfg["lib_path"]}._modidx:d']},
    version=cfg['version'], description=cfg['description'], author=cfg['author'], author_email=cfg['author_email'],
    keywords=cfg['keywords'])

// Prints, as JSON, the chunks (BAI, CSI, TBI) or the containers (CRAI)
// that the GMOD readers compute for regions. Reads from stdin:
// {"kind": "bai"|"bamcsi"|"tbi"|"vcfcsi"|"crai", "index": PATH,
//  "queries": [{"ref": NUMBER, "name": STRING, "start": N, "end": N}]}
// with 0-based, end-excluded coordinates; writes one array per query.
// Each query gets an index object of its own: the readers merge the
// chunks they cache in place, so a second query on the same object can
// see the first one's chunks.
import { readFileSync } from 'node:fs'
import { BAI, CSI as BamCSI } from '@gmod/bam'
import { TBI, CSI as TabixCSI } from '@gmod/tabix'
import { CraiIndex } from '@gmod/cram'
import { LocalFile } from 'generic-filehandle2'

const req = JSON.parse(readFileSync(0, 'utf8'))
const offset = v => [v.blockPosition, v.dataPosition]
const out = []
if (req.kind === 'crai') {
  for (const q of req.queries) {
    const idx = new CraiIndex({ filehandle: new LocalFile(req.index) })
    const slices = await idx.getEntriesForRange(q.ref, q.start, q.end)
    out.push(slices.map(s => s.containerStart))
  }
} else {
  const make = {
    bai: filehandle => new BAI({ filehandle }),
    bamcsi: filehandle => new BamCSI({ filehandle }),
    tbi: filehandle => new TBI({ filehandle }),
    vcfcsi: filehandle => new TabixCSI({ filehandle }),
  }[req.kind]
  const tabix = req.kind === 'tbi' || req.kind === 'vcfcsi'
  for (const q of req.queries) {
    const idx = make(new LocalFile(req.index))
    const chunks = tabix
      ? await idx.blocksForRange(q.name, q.start, q.end, {})
      : await idx.blocksForRange(q.ref, q.start, q.end)
    out.push(chunks.map(c => [...offset(c.minv), ...offset(c.maxv)]))
  }
}
console.log(JSON.stringify(out))

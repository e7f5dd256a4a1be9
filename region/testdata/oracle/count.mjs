// Prints, as JSON, how many records the GMOD readers find in each region
// of a BAM (with its BAI) or a VCF.gz (with its TBI). Reads from stdin:
// {"kind": "bam"|"vcf",
//  "queries": [{"data": PATH, "index": PATH, "name": STRING, "start": N, "end": N}]}
// with 0-based, end-excluded coordinates; writes one count per query.
import { readFileSync } from 'node:fs'
import { BamFile } from '@gmod/bam'
import { TabixIndexedFile } from '@gmod/tabix'

const req = JSON.parse(readFileSync(0, 'utf8'))
const out = []
for (const q of req.queries) {
  if (req.kind === 'bam') {
    const bam = new BamFile({ bamPath: q.data, baiPath: q.index })
    await bam.getHeader()
    out.push((await bam.getRecordsForRange(q.name, q.start, q.end)).length)
  } else {
    const vcf = new TabixIndexedFile({ path: q.data, tbiPath: q.index })
    let n = 0
    await vcf.getLines(q.name, q.start, q.end, () => { n++ })
    out.push(n)
  }
}
console.log(JSON.stringify(out))

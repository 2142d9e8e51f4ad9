"""The papers the experiments reproduce, cited by authors, year, title and arXiv id. REPRODUCTIONS.md
prints them as its references section; a row cites them by the short name."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Reference:
    short: str  # "Cho et al. 2024a": what a row prints
    authors: str
    year: int
    title: str
    arxiv: str

    @property
    def full(self) -> str:
        return f"{self.authors} ({self.year}). *{self.title}*. arXiv:{self.arxiv}."


REFERENCES: dict[str, Reference] = {r.arxiv: r for r in [
    Reference("Cho et al. 2024a", "Hanseul Cho, Jaeyoung Cha, Pranjal Awasthi, Srinadh Bhojanapalli, Anupam Gupta, "
              "Chulhee Yun", 2024, "Position Coupling: Improving Length Generalization of Arithmetic Transformers "
              "Using Task Structure", "2405.20671"),
    Reference("Cho et al. 2024b", "Hanseul Cho, Jaeyoung Cha, Srinadh Bhojanapalli, Chulhee Yun", 2024,
              "Arithmetic Transformers Can Length-Generalize in Both Operand Length and Count", "2410.15787"),
    Reference("Ruoss et al. 2023", "Anian Ruoss, Grégoire Delétang, Tim Genewein, Jordi Grau-Moya, Róbert Csordás, "
              "Mehdi Bennani, Shane Legg, Joel Veness", 2023,
              "Randomized Positional Encodings Boost Length Generalization of Transformers", "2305.16843"),
    Reference("Awasthi & Gupta 2023", "Pranjal Awasthi, Anupam Gupta", 2023,
              "Improving Length-Generalization in Transformers via Task Hinting", "2310.00726"),
    Reference("Jelassi et al. 2023", "Samy Jelassi, Stéphane d'Ascoli, Carles Domingo-Enrich, Yuhuai Wu, Yuanzhi Li, "
              "François Charton", 2023, "Length Generalization in Arithmetic Transformers", "2306.15400"),
    Reference("Zhou et al. 2024", "Yongchao Zhou, Uri Alon, Xinyun Chen, Xuezhi Wang, Rishabh Agarwal, Denny Zhou",
              2024, "Transformers Can Achieve Length Generalization But Not Robustly", "2402.09371"),
    Reference("McLeish et al. 2024", "Sean McLeish, Arpit Bansal, Alex Stein, Neel Jain, John Kirchenbauer, "
              "Brian R. Bartoldson, Bhavya Kailkhura, Abhinav Bhatele, Jonas Geiping, Avi Schwarzschild, "
              "Tom Goldstein", 2024, "Transformers Can Do Arithmetic with the Right Embeddings", "2405.17399"),
    Reference("Li et al. 2023b", "Shanda Li, Chong You, Guru Guruganesh, Joshua Ainslie, Santiago Ontanon, "
              "Manzil Zaheer, Sumit Sanghai, Yiming Yang, Sanjiv Kumar, Srinadh Bhojanapalli", 2023,
              "Functional Interpolation for Relative Positions Improves Long Context Transformers", "2310.04418"),
    Reference("Trockman et al. 2024", "Asher Trockman, Hrayr Harutyunyan, J. Zico Kolter, Sanjiv Kumar, "
              "Srinadh Bhojanapalli", 2024, "Mimetic Initialization Helps State Space Models Learn to Recall",
              "2410.11135"),
    Reference("Jelassi et al. 2024", "Samy Jelassi, David Brandfonbrener, Sham M. Kakade, Eran Malach", 2024,
              "Repeat After Me: Transformers are Better than State Space Models at Copying", "2402.01032"),
    Reference("Ren et al. 2024", "Ruifeng Ren, Zhicong Li, Yong Liu", 2024,
              "Exploring the Limitations of Mamba in COPY and CoT Reasoning", "2410.03810"),
    Reference("Arora et al. 2023", "Simran Arora, Sabri Eyuboglu, Aman Timalsina, Isys Johnson, Michael Poli, "
              "James Zou, Atri Rudra, Christopher Ré", 2023,
              "Zoology: Measuring and Improving Recall in Efficient Language Models", "2312.04927"),
    Reference("Fu et al. 2023", "Daniel Y. Fu, Tri Dao, Khaled K. Saab, Armin W. Thomas, Atri Rudra, "
              "Christopher Ré", 2023, "Hungry Hungry Hippos: Towards Language Modeling with State Space Models",
              "2212.14052"),
    Reference("Poli et al. 2023", "Michael Poli, Stefano Massaroli, Eric Nguyen, Daniel Y. Fu, Tri Dao, "
              "Stephen Baccus, Yoshua Bengio, Stefano Ermon, Christopher Ré", 2023,
              "Hyena Hierarchy: Towards Larger Convolutional Language Models", "2302.10866"),
    Reference("Zhai et al. 2023", "Shuangfei Zhai, Tatiana Likhomanenko, Etai Littwin, Dan Busbridge, Jason Ramapuram, "
              "Yizhe Zhang, Jiatao Gu, Josh Susskind", 2023,
              "Stabilizing Transformer Training by Preventing Attention Entropy Collapse", "2303.06296"),
    Reference("Li et al. 2023a", "Zonglin Li, Chong You, Srinadh Bhojanapalli, Daliang Li, Ankit Singh Rawat, "
              "Sashank J. Reddi, Ke Ye, Felix Chern, Felix Yu, Ruiqi Guo, Sanjiv Kumar", 2023,
              "The Lazy Neuron Phenomenon: On Emergence of Activation Sparsity in Transformers", "2210.06313"),
    Reference("Bondarenko et al. 2023", "Yelysei Bondarenko, Markus Nagel, Tijmen Blankevoort", 2023,
              "Quantizable Transformers: Removing Outliers by Helping Attention Heads Do Nothing", "2306.12929"),
    Reference("Mahdavi et al. 2024", "Sadegh Mahdavi, Renjie Liao, Christos Thrampoulidis", 2024,
              "Memorization Capacity of Multi-Head Attention in Transformers", "2306.02010"),
    Reference("Kajitsuka & Sato 2024", "Tokio Kajitsuka, Issei Sato", 2024,
              "Are Transformers with One Layer Self-Attention Using Low-Rank Weight Matrices Universal "
              "Approximators?", "2307.14023"),
    Reference("Chi et al. 2023", "Ta-Chung Chi, Ting-Han Fan, Alexander I. Rudnicky", 2023,
              "Attention Alignment and Flexible Positional Embeddings Improve Transformer Length Extrapolation",
              "2311.00684"),
    Reference("Wang et al. 2024", "Jie Wang, Tao Ji, Yuanbin Wu, Hang Yan, Tao Gui, Qi Zhang, Xuanjing Huang, "
              "Xiaoling Wang", 2024, "Length Generalization of Causal Transformers without Position Encoding",
              "2404.12224"),
    Reference("Dao et al. 2022", "Tri Dao, Daniel Y. Fu, Stefano Ermon, Atri Rudra, Christopher Ré", 2022,
              "FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness", "2205.14135"),
    Reference("Chiang & Cholak 2022", "David Chiang, Peter Cholak", 2022,
              "Overcoming a Theoretical Limitation of Self-Attention", "2202.12172"),
    Reference("Nakanishi 2025", "Ken M. Nakanishi", 2025, "Scalable-Softmax Is Superior for Attention", "2501.19399"),
    Reference("Zhang et al. 2024", "Xuechen Zhang, Xiangyu Chang, Mingchen Li, Amit Roy-Chowdhury, Jiasi Chen, "
              "Samet Oymak", 2024, "Selective Attention: Enhancing Transformer through Principled Context Control",
              "2411.12892"),
    Reference("Waleffe et al. 2024", "Roger Waleffe, Wonmin Byeon, Duncan Riach, Brandon Norick, Vijay Korthikanti, "
              "Tri Dao, Albert Gu, Ali Hatamizadeh, Sudhakar Singh, Deepak Narayanan, Garvit Kulshreshtha, "
              "Vartika Singh, Jared Casper, Jan Kautz, Mohammad Shoeybi, Bryan Catanzaro", 2024,
              "An Empirical Study of Mamba-based Language Models", "2406.07887"),
    Reference("Bondaschi et al. 2025", "Marco Bondaschi, Nived Rajaraman, Xiuying Wei, Kannan Ramchandran, "
              "Razvan Pascanu, Caglar Gulcehre, Michael Gastpar, Ashok Vardhan Makkuva", 2025,
              "From Markov to Laplace: How Mamba In-Context Learns Markov Chains", "2502.10178"),
    Reference("Gu & Dao 2023", "Albert Gu, Tri Dao", 2023,
              "Mamba: Linear-Time Sequence Modeling with Selective State Spaces", "2312.00752"),
    Reference("Olsson et al. 2022", "Catherine Olsson, Nelson Elhage, Neel Nanda, Nicholas Joseph, Nova DasSarma, "
              "Tom Henighan, Ben Mann, Amanda Askell, Yuntao Bai, Anna Chen, Tom Conerly, Dawn Drain, Deep Ganguli, "
              "Zac Hatfield-Dodds, Danny Hernandez, Scott Johnston, Andy Jones, Jackson Kernion, Liane Lovitt, "
              "Kamal Ndousse, Dario Amodei, Tom Brown, Jack Clark, Jared Kaplan, Sam McCandlish, Chris Olah", 2022,
              "In-context Learning and Induction Heads", "2209.11895"),
    Reference("Garg et al. 2022", "Shivam Garg, Dimitris Tsipras, Percy Liang, Gregory Valiant", 2022,
              "What Can Transformers Learn In-Context? A Case Study of Simple Function Classes", "2208.01066"),
    Reference("Bhattamishra et al. 2023", "Satwik Bhattamishra, Arkil Patel, Phil Blunsom, Varun Kanade", 2023,
              "Understanding In-Context Learning in Transformers and LLMs by Learning to Learn Discrete Functions",
              "2310.03016"),
    Reference("Yang et al. 2023", "Liu Yang, Kangwook Lee, Robert Nowak, Dimitris Papailiopoulos", 2023,
              "Looped Transformers are Better at Learning Learning Algorithms", "2311.12424"),
    Reference("Gatmiry et al. 2024", "Khashayar Gatmiry, Nikunj Saunshi, Sashank J. Reddi, Stefanie Jegelka, "
              "Sanjiv Kumar", 2024, "Can Looped Transformers Learn to Implement Multi-step Gradient Descent for "
              "In-context Learning?", "2410.08292"),
]}


def cite(keys) -> str:
    """"Cho et al. 2024a (arXiv:2405.20671)" for each key, joined."""
    return "; ".join(f"{REFERENCES[key].short} (arXiv:{key})" for key in keys)
